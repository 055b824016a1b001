//! Streams and events of the nvidia backend.

use std::any::Any;
use std::sync::Arc;

use cudarc::driver::result::{self as cu};
use cudarc::driver::sys;

use super::super::{EventBackend, StreamBackend};
use super::api;
use super::device::Core;
use crate::runtime::{Result, RuntimeError};

#[derive(Debug)]
pub(super) struct NvStream {
    pub(super) core: Arc<Core>,
    pub(super) stream: sys::CUstream,
    pub(super) generation: u64,
}
// Safety: stream handles may be used from any thread with the context current.
unsafe impl Send for NvStream {}
unsafe impl Sync for NvStream {}

impl StreamBackend for NvStream {
    fn synchronize(&self) -> Result<()> {
        let mut state = self.core.enter()?;
        self.core
            .check_generation(&state, self.generation, "stream")?;
        // Safety: a stream of the live context.
        unsafe { cu::stream::synchronize(self.stream) }
            .map_err(|e| self.core.fail(&mut state, "cuStreamSynchronize", e))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for NvStream {
    fn drop(&mut self) {
        if let Ok(state) = self.core.enter() {
            if state.generation == self.generation {
                // Safety: destroying our own stream of the live context.
                unsafe {
                    let _ = cu::stream::destroy(self.stream);
                }
            }
        }
    }
}

#[derive(Debug)]
pub(super) struct NvEvent {
    pub(super) core: Arc<Core>,
    pub(super) event: sys::CUevent,
    pub(super) generation: u64,
}
// Safety: event handles may be used from any thread with the context current.
unsafe impl Send for NvEvent {}
unsafe impl Sync for NvEvent {}

impl EventBackend for NvEvent {
    fn record(&self, stream: &dyn StreamBackend) -> Result<()> {
        let stream = stream
            .as_any()
            .downcast_ref::<NvStream>()
            .ok_or_else(|| RuntimeError::WrongDevice("stream of another backend".into()))?;
        let mut state = self.core.enter()?;
        self.core
            .check_generation(&state, self.generation, "event")?;
        self.core
            .check_generation(&state, stream.generation, "stream")?;
        // Safety: both handles were created by this backend in the live context.
        unsafe { cu::event::record(self.event, stream.stream) }
            .map_err(|e| self.core.fail(&mut state, "cuEventRecord", e))
    }
    fn synchronize(&self) -> Result<()> {
        let mut state = self.core.enter()?;
        self.core
            .check_generation(&state, self.generation, "event")?;
        // Safety: our own event of the live context.
        unsafe { cu::event::synchronize(self.event) }
            .map_err(|e| self.core.fail(&mut state, "cuEventSynchronize", e))
    }
    fn elapsed_ms(&self, end: &dyn EventBackend) -> Result<f32> {
        let end = end
            .as_any()
            .downcast_ref::<NvEvent>()
            .ok_or_else(|| RuntimeError::WrongDevice("event of another backend".into()))?;
        // Safety: both events were created and recorded by this backend.
        unsafe { cu::event::elapsed(self.event, end.event) }
            .map_err(|e| api("cuEventElapsedTime", e))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for NvEvent {
    fn drop(&mut self) {
        if let Ok(state) = self.core.enter() {
            if state.generation == self.generation {
                // Safety: destroying our own event of the live context.
                unsafe {
                    let _ = cu::event::destroy(self.event);
                }
            }
        }
    }
}
