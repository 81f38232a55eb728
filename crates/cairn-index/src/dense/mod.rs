//! Dense-vector arithmetic: the exact `f32` kernel and the integer codes with their bound.

pub(crate) mod int8;
pub(crate) mod kernel;
pub(crate) mod prefetch;
pub(crate) mod rows;
