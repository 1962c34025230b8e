//! A lesson step's claim as a check: `<figure> <op> <figure or number>` over the time-series
//! columns (`"accept_queue >= accept_queue_limit"`, `"total_p99_ms >= 1000"`,
//! `"server_responses_per_s >= 0.9 * target_rate"`), parsed once here and judged by the lab.

use super::column::{col, Col};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The server port's connections that hold a worker or a socket: ESTABLISHED, FIN_WAIT,
/// CLOSE_WAIT and LAST_ACK (the TCP-states panel's "held").
pub const HELD: [Col; 4] = [
    col::ESTABLISHED_SOCKS,
    col::FIN_WAIT,
    col::CLOSE_WAIT,
    col::LAST_ACK,
];

/// One figure a check reads: a column, or `held` (the sum of [`HELD`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figure {
    Col(Col),
    Held,
}

impl Figure {
    fn parse(name: &str) -> Option<Figure> {
        if name == "held" {
            return Some(Figure::Held);
        }
        col::ALL
            .iter()
            .find(|c| c.name() == name)
            .map(|c| Figure::Col(*c))
    }

    /// Its value from `value_of` (a column's value); `held` when any of its four was measured.
    pub fn value(self, value_of: &impl Fn(Col) -> Option<f64>) -> Option<f64> {
        match self {
            Figure::Col(c) => value_of(c),
            Figure::Held => {
                let v: Vec<f64> = HELD.iter().filter_map(|c| value_of(*c)).collect();
                (!v.is_empty()).then(|| v.iter().sum())
            }
        }
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Figure::Col(c) => f.write_str(&c.name()),
            Figure::Held => f.write_str("held"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Ge,
    Gt,
    Le,
    Lt,
}

impl Op {
    const ALL: [(&'static str, Op); 4] =
        [(">=", Op::Ge), ("<=", Op::Le), (">", Op::Gt), ("<", Op::Lt)];

    fn symbol(self) -> &'static str {
        Op::ALL
            .iter()
            .find(|(_, o)| *o == self)
            .map(|(s, _)| *s)
            .unwrap_or("?")
    }

    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Ge => a >= b,
            Op::Gt => a > b,
            Op::Le => a <= b,
            Op::Lt => a < b,
        }
    }
}

/// The right-hand side: a number, or a figure times a factor (1 when none is written).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    Num(f64),
    Figure(f64, Figure),
}

/// One check: `figure op bound`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Expect {
    pub figure: Figure,
    pub op: Op,
    pub bound: Bound,
}

/// Why a check's text is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpectError {
    NoOp(String),
    UnknownFigure(String),
    BadBound(String),
}

impl fmt::Display for ExpectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpectError::NoOp(s) => write!(
                f,
                "`{s}` is not a check: write `<figure> >= <number or figure>` (or >, <=, <), e.g. \"accept_queue >= accept_queue_limit\""
            ),
            ExpectError::UnknownFigure(s) => write!(
                f,
                "`{s}` is not a figure: use `held` or a column of timeseries.csv (e.g. accept_queue, total_p99_ms, responses_per_s: its header, docs/03-results.md)"
            ),
            ExpectError::BadBound(s) => write!(
                f,
                "`{s}` is not a bound: write a number, a figure, or `<number> * <figure>`"
            ),
        }
    }
}

impl std::error::Error for ExpectError {}

impl Expect {
    pub fn parse(text: &str) -> Result<Expect, ExpectError> {
        // The two-character operators first, so `>=` is not read as `>` then `=...`.
        let (at, op, len) = Op::ALL
            .iter()
            .filter_map(|(s, o)| text.find(s).map(|i| (i, *o, s.len())))
            .min_by_key(|(i, _, len)| (*i, std::cmp::Reverse(*len)))
            .ok_or_else(|| ExpectError::NoOp(text.to_string()))?;
        let lhs = text[..at].trim();
        let rhs = text[at + len..].trim();
        let figure =
            Figure::parse(lhs).ok_or_else(|| ExpectError::UnknownFigure(lhs.to_string()))?;
        let bound = Self::bound(rhs)?;
        Ok(Expect { figure, op, bound })
    }

    fn bound(rhs: &str) -> Result<Bound, ExpectError> {
        if let Ok(v) = rhs.parse::<f64>() {
            return if v.is_finite() {
                Ok(Bound::Num(v))
            } else {
                Err(ExpectError::BadBound(rhs.to_string()))
            };
        }
        let (k, name) = match rhs.split_once('*') {
            Some((k, name)) => match k.trim().parse::<f64>() {
                Ok(k) if k.is_finite() => (k, name.trim()),
                _ => return Err(ExpectError::BadBound(rhs.to_string())),
            },
            None => (1.0, rhs),
        };
        if name.is_empty() {
            return Err(ExpectError::BadBound(rhs.to_string()));
        }
        Figure::parse(name)
            .map(|f| Bound::Figure(k, f))
            .ok_or_else(|| ExpectError::UnknownFigure(name.to_string()))
    }

    /// The bound's value from `value_of`, None when its figure was not measured.
    pub fn bound_value(&self, value_of: &impl Fn(Col) -> Option<f64>) -> Option<f64> {
        match self.bound {
            Bound::Num(v) => Some(v),
            Bound::Figure(k, f) => f.value(value_of).map(|v| k * v),
        }
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.figure, self.op.symbol())?;
        match self.bound {
            Bound::Num(v) => write!(f, "{v}"),
            Bound::Figure(1.0, fig) => write!(f, "{fig}"),
            Bound::Figure(k, fig) => write!(f, "{k} * {fig}"),
        }
    }
}

impl<'de> Deserialize<'de> for Expect {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Expect::parse(&s).map_err(de::Error::custom)
    }
}

impl Serialize for Expect {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_reads_a_figure_an_operator_and_a_bound() {
        let e = Expect::parse("accept_queue >= accept_queue_limit").unwrap();
        assert_eq!(e.figure, Figure::Col(col::ACCEPT_QUEUE));
        assert_eq!(e.op, Op::Ge);
        assert_eq!(
            e.bound,
            Bound::Figure(1.0, Figure::Col(col::ACCEPT_QUEUE_LIMIT))
        );
        let e = Expect::parse("held>100").unwrap();
        assert_eq!(
            (e.figure, e.op, e.bound),
            (Figure::Held, Op::Gt, Bound::Num(100.0))
        );
        let e = Expect::parse(" server_responses_per_s >= 0.9 * target_rate ").unwrap();
        assert_eq!(e.bound, Bound::Figure(0.9, Figure::Col(col::TARGET_RATE)));
        assert_eq!(e.to_string(), "server_responses_per_s >= 0.9 * target_rate");
        assert_eq!(Expect::parse("total_p99_ms < 50").unwrap().op, Op::Lt);
        assert_eq!(Expect::parse("total_p99_ms <= 50").unwrap().op, Op::Le);
    }

    #[test]
    fn a_misspelt_figure_or_a_missing_operator_is_refused_with_what_to_write() {
        assert_eq!(
            Expect::parse("acept_queue >= 1"),
            Err(ExpectError::UnknownFigure("acept_queue".into()))
        );
        assert_eq!(
            Expect::parse("accept_queue = 1"),
            Err(ExpectError::NoOp("accept_queue = 1".into()))
        );
        assert_eq!(
            Expect::parse("accept_queue >= lots"),
            Err(ExpectError::UnknownFigure("lots".into()))
        );
        assert_eq!(
            Expect::parse("accept_queue >= x * held"),
            Err(ExpectError::BadBound("x * held".into()))
        );
        assert_eq!(
            Expect::parse("accept_queue >= inf"),
            Err(ExpectError::BadBound("inf".into()))
        );
    }

    #[test]
    fn held_sums_the_four_states_that_were_measured() {
        let v = |c: Col| (c == col::FIN_WAIT || c == col::ESTABLISHED_SOCKS).then_some(50.0);
        assert_eq!(Figure::Held.value(&v), Some(100.0));
        assert_eq!(Figure::Held.value(&|_| None), None);
    }
}
