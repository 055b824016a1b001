//! Element-wise comparison of one output buffer with the reference, and the report a person reads
//! when it fails: the worst element, how many failed, and the first few failures.

use std::fmt;

use crate::element::{ElemType, HostBuf};
use crate::Tolerance;

/// How many failing elements a report lists besides the worst one.
pub(crate) const FIRST_FAILURES: usize = 5;

/// One element that failed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failure {
    /// The element's index in the buffer.
    pub index: usize,
    /// What the kernel wrote, formatted for the report.
    pub got: String,
    /// What the reference wrote, formatted for the report.
    pub want: String,
    /// |got − want| (infinite when exactly one side is NaN or the sides are different infinities).
    pub abs_err: f64,
    /// abs_err / |want| (infinite when want is 0 and got is not).
    pub rel_err: f64,
    /// The kernel never wrote this element: it still holds the poison value.
    pub unwritten: bool,
}

/// The comparison of one output buffer that had at least one failing element.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mismatch {
    /// The argument's name.
    pub output: String,
    /// The buffer's element type.
    pub elem_type: crate::ElemType,
    /// The buffer's length, in elements.
    pub len: usize,
    /// The tolerance the elements were compared with, as the report prints it.
    pub tolerance: String,
    /// How many elements failed (the unwritten ones included).
    pub failed: usize,
    /// How many of the failed elements the kernel never wrote (they still hold the poison value).
    pub unwritten: usize,
    /// The failure with the largest absolute error (the first one on ties; NaN counts as
    /// infinite).
    pub worst: Failure,
    /// The first [`FIRST_FAILURES`] failures, in index order.
    pub first: Vec<Failure>,
}

/// Compare `got` with `want`; `None` when every element passes.
///
/// # Panics
/// When the buffers differ in type or length (the harness sizes both from the same spec).
pub(crate) fn compare(
    output: &str,
    got: &HostBuf,
    want: &HostBuf,
    tol: &Tolerance,
) -> Option<Mismatch> {
    assert_eq!(got.len(), want.len(), "output `{output}`: length mismatch");
    if got.all_within(want, tol) {
        return None;
    }
    let verdicts = got.verdicts(want, tol);
    let failure = |i: usize| Failure {
        index: i,
        got: got.fmt_elem(i),
        want: want.fmt_elem(i),
        abs_err: verdicts[i].abs_err,
        rel_err: verdicts[i].rel_err,
        unwritten: got.is_poison_at(i),
    };
    let mut failed = 0;
    let mut unwritten = 0;
    let mut worst: Option<usize> = None;
    let mut first = Vec::new();
    for (i, v) in verdicts.iter().enumerate() {
        if v.pass {
            continue;
        }
        failed += 1;
        if got.is_poison_at(i) {
            unwritten += 1;
        }
        if first.len() < FIRST_FAILURES {
            first.push(failure(i));
        }
        // Worst = largest absolute error; the first one wins ties (NaN counts as infinite).
        if worst.is_none_or(|w| v.abs_err > verdicts[w].abs_err) {
            worst = Some(i);
        }
    }
    let worst = failure(worst?);
    Some(Mismatch {
        output: output.to_owned(),
        elem_type: got.elem_type(),
        len: got.len(),
        tolerance: tol.describe_for(got.elem_type()),
        failed,
        unwritten,
        worst,
        first,
    })
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}]: got {}, want {} (abs err {:.3e}, rel err {:.3e})",
            self.index, self.got, self.want, self.abs_err, self.rel_err
        )?;
        if self.unwritten {
            f.write_str(" never written: still the poison value")?;
        }
        Ok(())
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The half types by the name the kernel knows them by too (`bf16`: `__hip_bfloat16`).
        let ty = match self.elem_type {
            ElemType::F16 | ElemType::BF16 => {
                format!("{} = {}", self.elem_type, self.elem_type.c_name())
            }
            t => t.to_string(),
        };
        writeln!(
            f,
            "output `{}` ({ty}, {} elements): {} of {} elements differ from the reference (tolerance: {})",
            self.output, self.len, self.failed, self.len, self.tolerance
        )?;
        if self.unwritten > 0 {
            writeln!(
                f,
                "  {} of them were never written by the kernel (still the poison value)",
                self.unwritten
            )?;
        }
        writeln!(f, "  worst: {}{}", self.output, self.worst)?;
        writeln!(f, "  first failures:")?;
        for fl in &self.first {
            writeln!(f, "    {}{}", self.output, fl)?;
        }
        if self.failed > self.first.len() {
            writeln!(f, "    … and {} more", self.failed - self.first.len())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Element;

    #[test]
    fn all_pass_is_none() {
        let a = HostBuf::from(vec![1.0f32, 2.0]);
        assert_eq!(compare("y", &a, &a.clone(), &Tolerance::default()), None);
    }

    #[test]
    fn report_names_worst_count_and_first_failures() {
        let want: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let mut got = want.clone();
        for i in [3, 10, 20, 30, 40, 50, 60] {
            got[i] += 0.5;
        }
        got[42] += 7.0;
        got[99] = f32::poison();
        let m = compare(
            "y",
            &HostBuf::from(got),
            &HostBuf::from(want),
            &Tolerance::default(),
        )
        .unwrap();
        assert_eq!(m.failed, 9);
        assert_eq!(m.unwritten, 1);
        assert_eq!(m.worst.index, 99, "NaN is the worst");
        assert_eq!(
            m.first.iter().map(|f| f.index).collect::<Vec<_>>(),
            [3, 10, 20, 30, 40]
        );
        let text = m.to_string();
        assert!(
            text.contains("output `y` (f32, 100 elements): 9 of 100 elements differ"),
            "{text}"
        );
        assert!(text.contains("worst: y[99]: got NaN, want 99.0 (abs err inf, rel err inf) never written: still the poison value"), "{text}");
        assert!(
            text.contains("y[3]: got 3.5, want 3.0 (abs err 5.000e-1, rel err 1.667e-1)"),
            "{text}"
        );
        assert!(text.contains("… and 4 more"), "{text}");
    }

    #[test]
    fn worst_is_largest_abs_error() {
        let m = compare(
            "out",
            &HostBuf::from(vec![1i32, 5, 2]),
            &HostBuf::from(vec![0i32, 0, 0]),
            &Tolerance::default(),
        )
        .unwrap();
        assert_eq!(m.worst.index, 1);
        assert_eq!(m.tolerance, "exact");
    }
}
