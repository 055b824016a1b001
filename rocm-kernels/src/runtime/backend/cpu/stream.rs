//! Streams and events of the cpu backend (launches run to their end before returning).

use std::any::Any;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::super::{EventBackend, StreamBackend};
use crate::library::Backend;
use crate::runtime::{Result, RuntimeError};

#[derive(Debug)]
pub(super) struct CpuStream;

impl StreamBackend for CpuStream {
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[derive(Debug, Default)]
pub(super) struct CpuEvent {
    pub(super) at: Mutex<Option<Instant>>,
}

impl CpuEvent {
    pub(super) fn time(&self) -> Result<Instant> {
        self.at
            .lock()
            .ok()
            .and_then(|at| *at)
            .ok_or_else(|| RuntimeError::Api {
                backend: Backend::Cpu,
                call: "event elapsed time".into(),
                message: "the event was never recorded".into(),
            })
    }
}

impl EventBackend for CpuEvent {
    fn record(&self, _stream: &dyn StreamBackend) -> Result<()> {
        if let Ok(mut at) = self.at.lock() {
            *at = Some(Instant::now());
        }
        Ok(())
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn elapsed_ms(&self, end: &dyn EventBackend) -> Result<f32> {
        let end = end
            .as_any()
            .downcast_ref::<CpuEvent>()
            .ok_or_else(|| RuntimeError::WrongDevice("event of another backend".into()))?;
        let elapsed = end
            .time()?
            .saturating_duration_since(self.time()?)
            .max(Duration::ZERO);
        Ok(elapsed.as_secs_f32() * 1e3)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
