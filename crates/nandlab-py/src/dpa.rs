//! Python bindings of the DPA codec, analysis and lifetime model (`nandlab.dpa`).

use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use nandlab_core::api;
use nandlab_core::dpa::{Backend, Choice, Codec, DpaError, Encoded};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::{call_core, panic_message, to_pyerr, Abandon, ConfigError, SimError};

const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

fn dpa_err(e: DpaError) -> PyErr {
    ConfigError::new_err(e.to_string())
}

/// A DPA-PPU page codec (Guo §2.4): chunk size 4/8/16/32 B, polynomial order and count
/// (default: Guo Table 4's 64 order-16 polynomials), kernel `auto`/`avx512`/`clmul`/`portable`.
/// What `encode` returns to Python: (stored page, correlated?, per-chunk tags,
/// ones after decorrelation, ones after scrambling).
type EncodedPage<'py> = (Bound<'py, PyBytes>, bool, Bound<'py, PyBytes>, u64, u64);

#[pyclass(name = "DpaCodec", module = "nandlab._core", frozen)]
pub struct DpaCodec {
    codec: Codec,
}

#[pymethods]
impl DpaCodec {
    #[new]
    #[pyo3(signature = (chunk_bytes=8, order=16, polynomials=None, backend="auto"))]
    fn new(
        chunk_bytes: usize,
        order: u32,
        polynomials: Option<usize>,
        backend: &str,
    ) -> PyResult<Self> {
        let polys = nandlab_core::dpa::poly::polynomial_set(order, polynomials).map_err(dpa_err)?;
        let be = Backend::parse(backend).map_err(dpa_err)?;
        Ok(DpaCodec {
            codec: Codec::with_backend(chunk_bytes, &polys, be).map_err(dpa_err)?,
        })
    }

    /// Chunk size, bytes.
    #[getter]
    fn chunk_bytes(&self) -> usize {
        self.codec.chunk_bytes()
    }

    /// The polynomials (bit k = coefficient of x^k), in tag order.
    #[getter]
    fn polynomials(&self) -> Vec<u32> {
        self.codec.polynomials().to_vec()
    }

    /// The kernel in use.
    #[getter]
    fn backend(&self) -> &'static str {
        self.codec.backend().name()
    }

    /// Encode one page. `choice`: "auto" (Guo Fig. 7), "decorrelate", "scramble", or an int
    /// tag (every chunk with that polynomial). Returns (stored, correlated, tags,
    /// ones_decorrelated, ones_scrambled).
    #[pyo3(signature = (page, choice=None))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        page: &[u8],
        choice: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<EncodedPage<'py>> {
        let ch = match choice {
            None => Choice::Auto,
            Some(c) => {
                if let Ok(t) = c.extract::<i64>() {
                    let t = u8::try_from(t).map_err(|_| {
                        ConfigError::new_err(format!("choice tag {t}: allowed 0..=255"))
                    })?;
                    Choice::Tag(t)
                } else {
                    match c.extract::<String>()?.as_str() {
                        "auto" => Choice::Auto,
                        "decorrelate" => Choice::Decorrelate,
                        "scramble" => Choice::Scramble,
                        other => {
                            return Err(ConfigError::new_err(format!(
                                "choice {other:?}: allowed auto, decorrelate, scramble or a tag"
                            )))
                        }
                    }
                }
            }
        };
        let mut e = Encoded::default();
        self.codec.encode(page, ch, &mut e).map_err(dpa_err)?;
        Ok((
            PyBytes::new(py, &e.stored),
            e.correlated,
            PyBytes::new(py, &e.tags),
            e.ones_decorrelated,
            e.ones_scrambled,
        ))
    }

    /// Decode a stored page with its correlation bit and tags.
    fn decode<'py>(
        &self,
        py: Python<'py>,
        stored: &[u8],
        correlated: bool,
        tags: &[u8],
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = Vec::new();
        self.codec
            .decode(stored, correlated, tags, &mut out)
            .map_err(dpa_err)?;
        Ok(PyBytes::new(py, &out))
    }
}

/// DPA-PPU statistics of files; request and result JSON. `progress(bytes_done, bytes_total)`
/// is called at most every 100 ms; an exception it raises (or Ctrl-C) stops the analysis.
#[pyfunction]
#[pyo3(signature = (request_json, progress=None))]
pub fn dpa_analyze(
    py: Python<'_>,
    request_json: String,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let mut pending: Option<PyErr> = None;
    let out = py.allow_threads(|| {
        let mut last: Option<Instant> = None;
        let mut cb = |done: u64, total: u64| {
            let now = Instant::now();
            let finished = total != 0 && done >= total;
            if let Some(t) = last {
                if !finished && now.duration_since(t) < PROGRESS_INTERVAL {
                    return;
                }
            }
            last = Some(now);
            let res = Python::with_gil(|py| -> PyResult<()> {
                py.check_signals()?;
                if let Some(f) = &progress {
                    f.call1(py, (done, total))?;
                }
                Ok(())
            });
            if let Err(e) = res {
                pending = Some(e);
                panic::resume_unwind(Box::new(Abandon));
            }
        };
        panic::catch_unwind(AssertUnwindSafe(|| {
            api::dpa_analyze(&request_json, &mut cb)
        }))
    });
    if let Some(e) = pending {
        return Err(e);
    }
    match out {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(to_pyerr(e)),
        Err(payload) => Err(SimError::new_err(format!(
            "internal error in dpa_analyze: {}",
            panic_message(payload.as_ref())
        ))),
    }
}

/// Sum analysed files and give each configuration's profile; JSON in (a list of files), JSON out.
#[pyfunction]
pub fn dpa_summarize(py: Python<'_>, files_json: String) -> PyResult<String> {
    call_core(py, "dpa_summarize", || api::dpa_summarize(&files_json))
}

/// The DPA lifetime model (Guo eq. 2.5–2.9); request and result JSON.
#[pyfunction]
pub fn dpa_lifetime(py: Python<'_>, request_json: String) -> PyResult<String> {
    call_core(py, "dpa_lifetime", || api::dpa_lifetime(&request_json))
}

/// The polynomial set of an order (2..=16) and count (default min(64, available)).
#[pyfunction]
#[pyo3(signature = (order=16, count=None))]
pub fn dpa_polynomials(order: u32, count: Option<usize>) -> PyResult<Vec<u32>> {
    api::dpa_polynomials(order, count).map_err(to_pyerr)
}

/// Register the DPA functions and class.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DpaCodec>()?;
    m.add_function(wrap_pyfunction!(dpa_analyze, m)?)?;
    m.add_function(wrap_pyfunction!(dpa_summarize, m)?)?;
    m.add_function(wrap_pyfunction!(dpa_lifetime, m)?)?;
    m.add_function(wrap_pyfunction!(dpa_polynomials, m)?)?;
    Ok(())
}
