"""TFLite input: reading flatbuffers and importing them into Relax."""
