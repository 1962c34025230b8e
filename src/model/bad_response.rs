//! Why a response was bad (`bad_responses`): a few reasons a user can act on, each counted, so
//! a run whose every response was malformed names the cause.

use serde::{Deserialize, Serialize};

/// Why a request's response was not a complete response of the load's protocol. Display is
/// the line a user reads (what the clients saw, and where to look).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BadReason {
    /// The bytes are not an HTTP/1.x response at all (status line, status code).
    NotHttp,
    /// The head was fine; the body's framing was not (Content-Length, chunked coding).
    Framing,
    /// The response head ran past what the parser takes (64 KiB).
    HeadTooLong,
    /// The server closed the connection before the response was complete (or before any
    /// byte of it).
    Closed,
    /// A multiplexed protocol's rules broken (HTTP/2 frames, HTTP/3), or a stream the one
    /// request of its connection was on refused, reset or given up by the server.
    Protocol,
    /// The TLS session under the response broke (a bad record, an alert after the handshake).
    Tls,
}

impl BadReason {
    pub const ALL: [BadReason; 6] = [
        BadReason::NotHttp,
        BadReason::Framing,
        BadReason::HeadTooLong,
        BadReason::Closed,
        BadReason::Protocol,
        BadReason::Tls,
    ];

    /// Its name in summary.json (`requests.bad_responses_by_reason`).
    pub fn name(self) -> &'static str {
        match self {
            BadReason::NotHttp => "not_http",
            BadReason::Framing => "framing",
            BadReason::HeadTooLong => "head_too_long",
            BadReason::Closed => "closed",
            BadReason::Protocol => "protocol",
            BadReason::Tls => "tls",
        }
    }
}

impl std::fmt::Display for BadReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BadReason::NotHttp => {
                "the server's answers are not HTTP (is the target an HTTP server on this port? try curl -v)"
            }
            BadReason::Framing => {
                "the responses' bodies are framed wrong (Content-Length or chunked coding)"
            }
            BadReason::HeadTooLong => "the response heads are over 64 KiB",
            BadReason::Closed => "the server closed connections before the response was complete",
            BadReason::Protocol => "the server broke the protocol (frames, or streams reset)",
            BadReason::Tls => "the TLS session broke under the response",
        })
    }
}

/// Bad responses by reason: they add up to `bad_responses`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BadReasons {
    pub not_http: u64,
    pub framing: u64,
    pub head_too_long: u64,
    pub closed: u64,
    pub protocol: u64,
    pub tls: u64,
}

impl BadReasons {
    fn slot(&mut self, r: BadReason) -> &mut u64 {
        match r {
            BadReason::NotHttp => &mut self.not_http,
            BadReason::Framing => &mut self.framing,
            BadReason::HeadTooLong => &mut self.head_too_long,
            BadReason::Closed => &mut self.closed,
            BadReason::Protocol => &mut self.protocol,
            BadReason::Tls => &mut self.tls,
        }
    }

    /// One more bad response for `r`.
    pub fn bump(&mut self, r: BadReason) {
        *self.slot(r) += 1;
    }

    pub fn get(&self, r: BadReason) -> u64 {
        match r {
            BadReason::NotHttp => self.not_http,
            BadReason::Framing => self.framing,
            BadReason::HeadTooLong => self.head_too_long,
            BadReason::Closed => self.closed,
            BadReason::Protocol => self.protocol,
            BadReason::Tls => self.tls,
        }
    }

    pub fn add(&mut self, o: &BadReasons) {
        for r in BadReason::ALL {
            *self.slot(r) += o.get(r);
        }
    }

    pub fn total(&self) -> u64 {
        BadReason::ALL.iter().map(|&r| self.get(r)).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    /// The reason most bad responses had, and how many (None: none was bad); a tie goes to
    /// the reason listed first.
    pub fn top(&self) -> Option<(BadReason, u64)> {
        BadReason::ALL
            .iter()
            .map(|&r| (r, self.get(r)))
            .filter(|&(_, n)| n > 0)
            .fold(None, |best: Option<(BadReason, u64)>, (r, n)| match best {
                Some((_, m)) if m >= n => best,
                _ => Some((r, n)),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_add_up_and_the_top_is_the_most_counted() {
        let mut b = BadReasons::default();
        assert_eq!(b.top(), None);
        b.bump(BadReason::Closed);
        b.bump(BadReason::NotHttp);
        b.bump(BadReason::NotHttp);
        let mut sum = b;
        sum.add(&b);
        assert_eq!(sum.total(), 6);
        assert_eq!(sum.top(), Some((BadReason::NotHttp, 4)));
        // Names in summary.json are the fields' names.
        let v = serde_json::to_value(b).unwrap();
        for r in BadReason::ALL {
            assert_eq!(v[r.name()], b.get(r), "{}", r.name());
        }
        assert_eq!(
            BadReason::NotHttp.to_string(),
            "the server's answers are not HTTP (is the target an HTTP server on this port? try curl -v)"
        );
    }
}
