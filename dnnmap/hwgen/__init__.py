"""Hardware generation (seed 003 section 3.1): search the sparse SIMD template's parameters for whole
networks under an area or PE budget, each candidate priced by mapping the networks (docs/hwgen.md)."""
