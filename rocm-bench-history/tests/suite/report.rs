//! The HTML/SVG report.
