//! Reading a diagnosis answer (being written).
