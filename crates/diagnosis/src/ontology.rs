//! The pack's diagnosis ontology and the mention matcher (being written).
