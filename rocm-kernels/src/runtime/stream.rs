//! [`Stream`] and [`Event`].

use std::time::Duration;

use super::backend::{EventBackend, StreamBackend};
use super::{Device, Result};

/// An ordered queue of work on a device. On the cpu backend every operation completes before it
/// returns, so a stream only orders and times work.
#[derive(Debug)]
pub struct Stream {
    device: Device,
    inner: Box<dyn StreamBackend>,
}

impl Stream {
    pub(crate) fn new(device: &Device) -> Result<Self> {
        Ok(Stream {
            device: device.clone(),
            inner: device.inner.new_stream()?,
        })
    }

    /// The device its work runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    pub(crate) fn inner(&self) -> &dyn StreamBackend {
        self.inner.as_ref()
    }

    /// Wait until everything queued so far has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }

    /// Record a new event at this point of the stream.
    pub fn record(&self) -> Result<Event> {
        let event = Event {
            inner: self.device.inner.new_event()?,
        };
        event.inner.record(self.inner.as_ref())?;
        Ok(event)
    }
}

/// A recorded point of a stream, for timing: `end.elapsed_since(&start)`.
#[derive(Debug)]
pub struct Event {
    inner: Box<dyn EventBackend>,
}

impl Event {
    /// Record this event again, at the current end of `stream`.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        self.inner.record(stream.inner())
    }

    /// Wait until the work before the event has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }

    /// Time from `start` to this event (waits for this event).
    pub fn elapsed_since(&self, start: &Event) -> Result<Duration> {
        self.inner.synchronize()?;
        let ms = start.inner.elapsed_ms(self.inner.as_ref())?;
        Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    }
}
