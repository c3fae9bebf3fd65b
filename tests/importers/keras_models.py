"""Keras models shared by the Keras-file and SavedModel importer tests (need keras): small hand-built ones and
``keras.applications`` architectures without weights (:func:`application`)."""

from __future__ import annotations

import keras
from keras import layers


def small_model(dilated: bool = False) -> keras.Model:
    """Padding, strided/depthwise/separable convs, batch-norm, relu/relu6, residual add, max/avg pooling,
    concat, global pooling, dropout and a softmax dense layer; ``dilated`` adds a dilated SAME conv."""
    inp = keras.Input((32, 32, 3), name="img")
    x = layers.ZeroPadding2D(((0, 1), (0, 1)))(inp)
    x = layers.Conv2D(8, 3, strides=2, activation="relu", name="stem")(x)
    y = layers.DepthwiseConv2D(3, padding="same", depth_multiplier=2, name="dw")(x)
    y = layers.BatchNormalization(name="dw_bn")(y)
    y = layers.ReLU(6.0, name="dw_relu")(y)
    y = layers.Conv2D(8, 1, name="project")(y)
    x = layers.Add(name="add")([x, y])
    s = layers.SeparableConv2D(16, 3, padding="same", activation="relu", name="sep")(x)
    m = layers.MaxPooling2D(2, name="pool")(s)
    a = layers.AveragePooling2D(3, strides=2, padding="same", name="avgpool")(s)
    c = layers.Concatenate(name="cat")([m, a])
    if dilated:
        c = layers.Conv2D(12, 3, dilation_rate=2, padding="same", name="dilated")(c)
    c = layers.GlobalAveragePooling2D(name="gap")(c)
    c = layers.Dropout(0.5)(c)
    out = layers.Dense(10, activation="softmax", name="fc")(c)
    return keras.Model(inp, out, name="small")


def application(name: str) -> keras.Model:
    """The ``keras.applications`` architecture ``name`` (``weights=None``, logits out) with its weights never
    initialized: the Keras front end reads the model's configuration only, and initializing the weights costs
    memory the TensorFlow allocator keeps for the rest of the process (VGG16: 138 M random parameters, +1.4 GB
    of resident memory that stayed with the test runner until it exited; measured in docs/architecture.md).
    Keras defers each variable's initializer inside ``StatelessScope(initialize_variables=False)`` and would run
    them all when a later scope exits; ``clear_session`` drops that list. Not for a model that is saved or
    called (its weights have no values)."""
    with keras.StatelessScope(initialize_variables=False):
        model = getattr(keras.applications, name)(weights=None, classifier_activation=None)
    keras.backend.clear_session()
    return model
