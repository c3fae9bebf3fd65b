"""Parametric hardware templates: functions from a few hardware parameters to a validated ArchSpec."""
