//! Scenario model (filled below).
