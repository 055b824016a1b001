//! Finding the compute devices of this machine (being written).
