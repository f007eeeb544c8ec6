//! A recorder for the `metrics` facade that keeps every series in memory and renders them in
//! Prometheus's text format: the part of an exporter crate this example needs, written out.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};

/// One series: a counter, a gauge or a histogram (kept as a summary's sum and count).
#[derive(Clone)]
enum Series {
    Counter(Arc<Count>),
    Gauge(Arc<Level>),
    Summary(Arc<Sum>),
}

#[derive(Default)]
struct Count(AtomicU64);

impl CounterFn for Count {
    fn increment(&self, value: u64) {
        self.0.fetch_add(value, Ordering::Relaxed);
    }
    fn absolute(&self, value: u64) {
        self.0.fetch_max(value, Ordering::Relaxed);
    }
}

/// A gauge's value: an `f64`, in an atomic's bits.
#[derive(Default)]
struct Level(AtomicU64);

impl Level {
    fn update(&self, change: impl Fn(f64) -> f64) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some(change(f64::from_bits(bits)).to_bits())
            });
    }
}

impl GaugeFn for Level {
    fn increment(&self, value: f64) {
        self.update(|level| level + value);
    }
    fn decrement(&self, value: f64) {
        self.update(|level| level - value);
    }
    fn set(&self, value: f64) {
        self.update(|_| value);
    }
}

#[derive(Default)]
struct Sum(Mutex<(f64, u64)>);

impl HistogramFn for Sum {
    fn record(&self, value: f64) {
        let mut sum = self.0.lock().unwrap();
        sum.0 += value;
        sum.1 += 1;
    }
}

/// A label's value as the text format writes it: a key's limit name comes from a server's
/// header, and a quote or a line break in it would end the label, or the line, early.
fn escaped(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Every series registered, by name and labels, rendered on demand.
#[derive(Clone, Default)]
pub struct Prometheus(Arc<Mutex<BTreeMap<(String, String), Series>>>);

impl Prometheus {
    /// The series `key` names, made by `make` the first time.
    fn series(&self, key: &Key, make: impl FnOnce() -> Series) -> Series {
        let labels = key
            .labels()
            .map(|label| format!("{}=\"{}\"", label.key(), escaped(label.value())))
            .collect::<Vec<_>>()
            .join(",");
        let mut all = self.0.lock().unwrap();
        all.entry((key.name().to_owned(), labels))
            .or_insert_with(make)
            .clone()
    }

    /// Every series, one line each (a histogram: its sum and count), sorted by name.
    pub fn render(&self) -> String {
        let mut text = String::new();
        for ((name, labels), series) in self.0.lock().unwrap().iter() {
            let _ = match series {
                Series::Counter(count) => {
                    writeln!(
                        text,
                        "{name}{{{labels}}} {}",
                        count.0.load(Ordering::Relaxed)
                    )
                }
                Series::Gauge(level) => {
                    let level = f64::from_bits(level.0.load(Ordering::Relaxed));
                    writeln!(text, "{name}{{{labels}}} {level}")
                }
                Series::Summary(sum) => {
                    let (sum, count) = *sum.0.lock().unwrap();
                    writeln!(
                        text,
                        "{name}_sum{{{labels}}} {sum:.3}\n{name}_count{{{labels}}} {count}"
                    )
                }
            };
        }
        text
    }
}

impl Recorder for Prometheus {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        match self.series(key, || Series::Counter(Arc::default())) {
            Series::Counter(count) => Counter::from_arc(count),
            _ => Counter::noop(),
        }
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        match self.series(key, || Series::Gauge(Arc::default())) {
            Series::Gauge(level) => Gauge::from_arc(level),
            _ => Gauge::noop(),
        }
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        match self.series(key, || Series::Summary(Arc::default())) {
            Series::Summary(sum) => Histogram::from_arc(sum),
            _ => Histogram::noop(),
        }
    }
}
