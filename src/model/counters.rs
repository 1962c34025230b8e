//! The client's event counters: one type for a worker's per-interval deltas and for the sums
//! the controller folds them into, with one `add` and one rule for what counts as an error.
//!
//! Connections and requests are counted apart, each with an identity that holds over any span
//! (a report interval, a point, the run), given what was in progress at its two ends:
//! - connections: `attempts + connecting at start = established + connection errors +
//!   connecting at end`;
//! - requests: `requests + in flight at start = responses + request errors + in flight at end`.
//!
//! With one request per connection (HTTP/1.0) every established connection carries one
//! request, so `attempts = responses + errors + in_flight_at_end` over a run; with keep-alive a
//! connection carries many, and only the two identities hold.
//!
//! Over TLS a connection is established when its handshake is done: a connect in progress and
//! a handshake in progress are both `connecting`, and a handshake that fails (timeout, alert,
//! bad certificate, protocol error) is a connection error. Every established TLS connection did
//! one handshake, full or resumed: `established = handshakes_full + handshakes_resumed`.

use super::h2_resets::ResetsByCode;
use serde::{Deserialize, Serialize};

/// Counts of client events over some span of time (a report interval, a sample, a point, a run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counters {
    // Connections.
    /// Connects started (a socket asked for, whether or not the kernel gave one).
    pub attempts: u64,
    pub established: u64,
    pub connect_timeouts: u64,
    /// ECONNREFUSED, or a reset before the connection was established (an RST for the SYN).
    pub refused: u64,
    /// EADDRNOTAVAIL: the client ran out of ephemeral ports.
    pub addr_not_avail: u64,
    /// EMFILE / ENFILE: out of descriptors.
    pub out_of_fds: u64,
    /// Any other failure before the connection was established (a bind to an address not on
    /// this host, ENETUNREACH, ...).
    pub connect_other_errors: u64,
    /// Arrivals not started because the D cap was reached (open mode).
    pub client_cap_drops: u64,
    // TLS handshakes (each a step of its connection's establishment).
    /// Handshakes done without a session (full) and resuming one.
    pub handshakes_full: u64,
    pub handshakes_resumed: u64,
    /// Handshakes not done within the handshake timeout.
    pub handshake_timeouts: u64,
    /// Handshakes the server refused with an alert.
    pub tls_alerts: u64,
    /// Handshakes whose certificate did not verify (verification on).
    pub bad_certificates: u64,
    /// Handshakes that broke otherwise: not TLS, a message out of place, closed midway.
    pub tls_protocol_errors: u64,
    // Requests.
    /// Requests begun on an established connection (counted when the request is set up, before
    /// its first byte is handed to the kernel).
    pub requests: u64,
    pub responses: u64,
    pub responses_2xx: u64,
    pub responses_non2xx: u64,
    /// Responses whose status is good ([`GoodStatuses`]: 2xx, or the statuses the scenario
    /// names), and those whose status is a failure (5xx, and 4xx not named good). A 1xx/3xx
    /// not named good is neither.
    pub responses_good: u64,
    pub responses_failed: u64,
    pub response_timeouts: u64,
    /// ECONNRESET / EPIPE while a request was being sent or answered.
    pub resets: u64,
    /// Responses that were not HTTP, or connections closed before the response was complete.
    pub bad_responses: u64,
    /// `bad_responses` by reason (they add up to it).
    pub bad_by_reason: crate::model::BadReasons,
    /// Any other failure of a request's send or receive.
    pub request_other_errors: u64,
    /// Pool mode: requests that found no idle connection when they were due and waited for
    /// one, and those waits in sum (us, from the scheduled time to the send).
    pub pool_waits: u64,
    pub pool_wait_us_sum: u64,
    /// Pool mode: responses to the pool's requests and their time in sum (us, from the send
    /// to the response: the server's part, without the wait for a connection).
    pub pool_served: u64,
    pub pool_service_us_sum: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Scheduled starts taken on time (not waiting for a pool connection) and how late they
    /// were in sum (us).
    pub scheduled: u64,
    pub lag_us_sum: u64,
    // What a worker still had in progress when it stopped (its last report only).
    /// Connects still in progress.
    pub connecting_at_end: u64,
    /// Requests sent and not yet answered or failed.
    pub requests_at_end: u64,
    // Multiplexed connections (HTTP/2).
    /// Handshakes whose ALPN choice was not the load's protocol (`h2`): connection errors.
    pub alpn_refused: u64,
    /// Requests the server refused (REFUSED_STREAM) or left unprocessed (above a GOAWAY's
    /// last stream): sent again on another connection, still in flight (not errors).
    pub streams_refused: u64,
    pub streams_unprocessed: u64,
    /// Requests reset by the server with another code: request errors.
    pub stream_resets: u64,
    /// The same resets by their error code (they add up to `stream_resets`).
    #[serde(skip_serializing_if = "ResetsByCode::is_zero")]
    pub stream_resets_by_code: ResetsByCode,
    /// GOAWAYs received (the connection finishes its streams and is replaced).
    pub goaways: u64,
    /// Header blocks' bytes on the wire and as HTTP/1.1 lines (HPACK's saving), both ways.
    pub header_bytes_wire: u64,
    pub header_bytes_plain: u64,
    /// Flow-control windows that stood at 0, and for how long in sum (us).
    pub flow_stalls: u64,
    pub flow_stall_us: u64,
    /// Connection setups done (connect, TLS, the server's SETTINGS in) and their time in sum
    /// (us, from the scheduled start).
    pub setups: u64,
    pub setup_us_sum: u64,
    /// The latency split (issue 48 item 4): of the completed responses' times, the part
    /// before their requests went out, summed (us: a connection's first request waited for
    /// its connect and handshake, a pool's request for a free connection), and the responses
    /// that were their connection's first (its accept-queue wait was theirs).
    pub before_send_us: u64,
    pub first_responses: u64,
    /// Of `before_send_us`, a multiplexed request's wait for a stream slot on a usable
    /// connection (the server's stream limit, or M, full), us: the split's queue over HTTP/2
    /// and HTTP/3.
    pub stream_wait_us: u64,
}

impl Counters {
    /// Adds another span's counts: the one place where counters are summed, so a counter added
    /// to the struct cannot be dropped on its way from the worker to the results.
    pub fn add(&mut self, o: &Counters) {
        // Destructured so that a new field is a compile error here until it is summed.
        let Counters {
            attempts,
            established,
            connect_timeouts,
            refused,
            addr_not_avail,
            out_of_fds,
            connect_other_errors,
            client_cap_drops,
            handshakes_full,
            handshakes_resumed,
            handshake_timeouts,
            tls_alerts,
            bad_certificates,
            tls_protocol_errors,
            requests,
            responses,
            responses_2xx,
            responses_non2xx,
            responses_good,
            responses_failed,
            response_timeouts,
            resets,
            bad_responses,
            bad_by_reason,
            request_other_errors,
            pool_waits,
            pool_wait_us_sum,
            pool_served,
            pool_service_us_sum,
            bytes_in,
            bytes_out,
            scheduled,
            lag_us_sum,
            connecting_at_end,
            requests_at_end,
            alpn_refused,
            streams_refused,
            streams_unprocessed,
            stream_resets,
            stream_resets_by_code,
            goaways,
            header_bytes_wire,
            header_bytes_plain,
            flow_stalls,
            flow_stall_us,
            setups,
            setup_us_sum,
            before_send_us,
            first_responses,
            stream_wait_us,
        } = *o;
        self.attempts += attempts;
        self.established += established;
        self.connect_timeouts += connect_timeouts;
        self.refused += refused;
        self.addr_not_avail += addr_not_avail;
        self.out_of_fds += out_of_fds;
        self.connect_other_errors += connect_other_errors;
        self.client_cap_drops += client_cap_drops;
        self.handshakes_full += handshakes_full;
        self.handshakes_resumed += handshakes_resumed;
        self.handshake_timeouts += handshake_timeouts;
        self.tls_alerts += tls_alerts;
        self.bad_certificates += bad_certificates;
        self.tls_protocol_errors += tls_protocol_errors;
        self.requests += requests;
        self.responses += responses;
        self.responses_2xx += responses_2xx;
        self.responses_non2xx += responses_non2xx;
        self.responses_good += responses_good;
        self.responses_failed += responses_failed;
        self.response_timeouts += response_timeouts;
        self.resets += resets;
        self.bad_responses += bad_responses;
        self.bad_by_reason.add(&bad_by_reason);
        self.request_other_errors += request_other_errors;
        self.pool_waits += pool_waits;
        self.pool_wait_us_sum += pool_wait_us_sum;
        self.pool_served += pool_served;
        self.pool_service_us_sum += pool_service_us_sum;
        self.bytes_in += bytes_in;
        self.bytes_out += bytes_out;
        self.scheduled += scheduled;
        self.lag_us_sum += lag_us_sum;
        self.connecting_at_end += connecting_at_end;
        self.requests_at_end += requests_at_end;
        self.alpn_refused += alpn_refused;
        self.streams_refused += streams_refused;
        self.streams_unprocessed += streams_unprocessed;
        self.stream_resets += stream_resets;
        self.stream_resets_by_code.add(&stream_resets_by_code);
        self.goaways += goaways;
        self.header_bytes_wire += header_bytes_wire;
        self.header_bytes_plain += header_bytes_plain;
        self.flow_stalls += flow_stalls;
        self.flow_stall_us += flow_stall_us;
        self.setups += setups;
        self.setup_us_sum += setup_us_sum;
        self.before_send_us += before_send_us;
        self.first_responses += first_responses;
        self.stream_wait_us += stream_wait_us;
    }

    /// Connects that failed: never established (over TLS, their handshake's failures too).
    pub fn connection_errors(&self) -> u64 {
        self.connect_timeouts
            + self.refused
            + self.addr_not_avail
            + self.out_of_fds
            + self.connect_other_errors
            + self.alpn_refused
            + self.handshake_errors()
    }

    /// TLS handshakes that failed.
    pub fn handshake_errors(&self) -> u64 {
        self.handshake_timeouts + self.tls_alerts + self.bad_certificates + self.tls_protocol_errors
    }

    /// TLS handshakes completed, full and resumed.
    pub fn handshakes(&self) -> u64 {
        self.handshakes_full + self.handshakes_resumed
    }

    /// Requests that failed: sent (or begun) and never answered. Malformed or truncated
    /// responses are errors, not responses.
    pub fn request_errors(&self) -> u64 {
        self.response_timeouts
            + self.resets
            + self.bad_responses
            + self.request_other_errors
            + self.stream_resets
    }

    /// Every failure a person would count: connections that never got through and requests
    /// that never got a response.
    pub fn errors(&self) -> u64 {
        self.connection_errors() + self.request_errors()
    }

    /// Every failure a gate counts: [`Counters::errors`] and the responses whose status is a
    /// failure (a 503 is a failed request, however fast it came).
    pub fn failures(&self) -> u64 {
        self.errors() + self.responses_failed
    }

    /// Connects and requests still in progress when the workers stopped.
    pub fn in_flight_at_end(&self) -> u64 {
        self.connecting_at_end + self.requests_at_end
    }
}

/// The response statuses a scenario counts as good (`[gate] good_statuses`; empty: every
/// 2xx): the one rule by which a worker sorts a response into good, failed or neither.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GoodStatuses(pub Vec<u16>);

/// What a response's status makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    /// 2xx, or a status named good.
    Good,
    /// 5xx, or 4xx, not named good (or a status outside 100-599).
    Failed,
    /// 1xx or 3xx not named good: not a good response, not a failure.
    Neither,
}

impl GoodStatuses {
    pub fn class(&self, status: u16) -> StatusClass {
        let good = if self.0.is_empty() {
            (200..300).contains(&status)
        } else {
            self.0.contains(&status)
        };
        match status {
            _ if good => StatusClass::Good,
            100..=399 => StatusClass::Neither,
            _ => StatusClass::Failed,
        }
    }
}

/// What the clients had in progress at one instant (a window's edge).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InProgress {
    /// Connects begun and not yet established or failed.
    pub connecting: u64,
    /// Requests begun and not yet answered or failed.
    pub requests: u64,
}

impl<'a> std::iter::Sum<&'a InProgress> for InProgress {
    /// What several workers had in progress at once.
    fn sum<I: Iterator<Item = &'a InProgress>>(v: I) -> Self {
        v.fold(InProgress::default(), |a, b| InProgress {
            connecting: a.connecting + b.connecting,
            requests: a.requests + b.requests,
        })
    }
}

/// Counts of a point or a run as summary.json gives them, to hold against a server's log
/// or a packet capture. `connections` and `requests` each state their identity; the flat
/// fields are the totals of both, kept for scripts written before the split.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub attempts: u64,
    pub established: u64,
    /// Complete HTTP responses, any status.
    pub responses: u64,
    pub non2xx: u64,
    /// Responses whose status is good, and those whose status is a failure ([`GoodStatuses`]).
    #[serde(default)]
    pub good: u64,
    #[serde(default)]
    pub failed_responses: u64,
    /// Connection errors and request errors.
    pub errors: u64,
    pub errors_by_kind: ErrorKinds,
    /// Connects and requests neither finished nor failed when the window (or the run) ended.
    pub in_flight_at_end: u64,
    /// SYNs the server's interface saw (pcap), when captured, as of the probe sample nearest
    /// before the end.
    pub syn_in: Option<u64>,
    /// Of `syn_in`, SYNs seen again with the same 4-tuple and ISN (the clients' retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syn_retrans: Option<u64>,
    /// The clients' kernels' own count of connects: TcpActiveOpens summed over the client
    /// namespaces from the load's start (network lab only). Once per connect, retries or not:
    /// `syn_in - syn_retrans` is this less the connects none of whose SYNs reached the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_active_opens: Option<u64>,
    /// The server's own count of responses (built-in server, or its access log), when known.
    pub server_responses: Option<u64>,
    /// The connections' counts and identity.
    #[serde(default)]
    pub connections: ConnectionTotals,
    /// The requests' counts and identity.
    #[serde(default)]
    pub requests: RequestTotals,
    /// Over TLS: the handshakes, as the clients and the server counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<HandshakeTotals>,
}

/// A span's TLS handshakes: completed ones full and resumed (their sum is the connections
/// established), failed ones (in the connections' errors by kind), and the server's own count
/// where it has one (the built-in server's counters, an access log's session-reuse field).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HandshakeTotals {
    pub full: u64,
    pub resumed: u64,
    pub failed: u64,
    /// `resumed / (full + resumed)`, None without a completed handshake.
    pub resumed_share: Option<f64>,
    pub server_full: Option<u64>,
    pub server_resumed: Option<u64>,
}

impl HandshakeTotals {
    /// The share of `resumed` in `full + resumed`, None when both are 0.
    pub fn share(full: u64, resumed: u64) -> Option<f64> {
        (full + resumed > 0).then(|| resumed as f64 / (full + resumed) as f64)
    }
}

/// [`Counters::errors`] split by cause.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorKinds {
    pub connect_timeouts: u64,
    pub refused: u64,
    pub resets: u64,
    pub bad_responses: u64,
    pub response_timeouts: u64,
    /// EADDRNOTAVAIL: ephemeral ports exhausted.
    pub addr_not_avail: u64,
    /// EMFILE / ENFILE: descriptors exhausted.
    pub out_of_fds: u64,
    pub other: u64,
    /// TLS handshakes that failed, by kind (0 without TLS).
    #[serde(flatten)]
    pub tls: HandshakeErrorKinds,
}

/// TLS handshakes that failed, by kind: connection errors (absent, so 0, in files written
/// before TLS).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HandshakeErrorKinds {
    pub handshake_timeouts: u64,
    pub tls_alerts: u64,
    pub bad_certificates: u64,
    pub tls_protocol_errors: u64,
}

impl HandshakeErrorKinds {
    pub fn of(c: &Counters) -> Self {
        HandshakeErrorKinds {
            handshake_timeouts: c.handshake_timeouts,
            tls_alerts: c.tls_alerts,
            bad_certificates: c.bad_certificates,
            tls_protocol_errors: c.tls_protocol_errors,
        }
    }
}

/// A span's connections: `attempts + connecting_at_start = established + errors +
/// connecting_at_end`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionTotals {
    pub attempts: u64,
    pub established: u64,
    pub errors: u64,
    pub errors_by_kind: ConnectionErrorKinds,
    pub connecting_at_start: u64,
    pub connecting_at_end: u64,
}

/// [`Counters::connection_errors`] split by cause.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionErrorKinds {
    pub connect_timeouts: u64,
    pub refused: u64,
    pub addr_not_avail: u64,
    pub out_of_fds: u64,
    pub other: u64,
    /// Over TLS, the handshake's failures.
    #[serde(flatten)]
    pub tls: HandshakeErrorKinds,
}

/// A span's requests: `sent + in_flight_at_start = responses + errors + in_flight_at_end`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestTotals {
    pub sent: u64,
    pub responses: u64,
    pub errors: u64,
    pub errors_by_kind: RequestErrorKinds,
    /// `errors_by_kind.bad_responses` by reason (absent when none was bad).
    #[serde(default, skip_serializing_if = "crate::model::BadReasons::is_empty")]
    pub bad_responses_by_reason: crate::model::BadReasons,
    pub in_flight_at_start: u64,
    pub in_flight_at_end: u64,
}

/// [`Counters::request_errors`] split by cause.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestErrorKinds {
    pub response_timeouts: u64,
    /// Reset mid-request (ECONNRESET / EPIPE).
    pub resets: u64,
    pub bad_responses: u64,
    pub other: u64,
}

impl ConnectionTotals {
    /// True when every attempt is accounted for.
    pub fn identity_holds(&self) -> bool {
        self.attempts + self.connecting_at_start
            == self.established + self.errors + self.connecting_at_end
    }
}

impl RequestTotals {
    /// True when every request is accounted for.
    pub fn identity_holds(&self) -> bool {
        self.sent + self.in_flight_at_start == self.responses + self.errors + self.in_flight_at_end
    }
}

impl Totals {
    /// The counts of `c` over a span that began with `at_start` in progress and ended with
    /// `at_end` in progress (beyond what `c` says its workers left when they stopped).
    pub fn of(c: &Counters, at_start: InProgress, at_end: InProgress) -> Self {
        let connecting_at_end = c.connecting_at_end + at_end.connecting;
        let requests_at_end = c.requests_at_end + at_end.requests;
        Totals {
            attempts: c.attempts,
            established: c.established,
            responses: c.responses,
            non2xx: c.responses_non2xx,
            good: c.responses_good,
            failed_responses: c.responses_failed,
            errors: c.errors(),
            errors_by_kind: ErrorKinds {
                connect_timeouts: c.connect_timeouts,
                refused: c.refused,
                resets: c.resets,
                bad_responses: c.bad_responses,
                response_timeouts: c.response_timeouts,
                addr_not_avail: c.addr_not_avail,
                out_of_fds: c.out_of_fds,
                other: c.connect_other_errors + c.request_other_errors,
                tls: HandshakeErrorKinds::of(c),
            },
            in_flight_at_end: connecting_at_end + requests_at_end,
            syn_in: None,
            syn_retrans: None,
            client_active_opens: None,
            server_responses: None,
            connections: ConnectionTotals {
                attempts: c.attempts,
                established: c.established,
                errors: c.connection_errors(),
                errors_by_kind: ConnectionErrorKinds {
                    connect_timeouts: c.connect_timeouts,
                    refused: c.refused,
                    addr_not_avail: c.addr_not_avail,
                    out_of_fds: c.out_of_fds,
                    other: c.connect_other_errors,
                    tls: HandshakeErrorKinds::of(c),
                },
                connecting_at_start: at_start.connecting,
                connecting_at_end,
            },
            requests: RequestTotals {
                sent: c.requests,
                responses: c.responses,
                errors: c.request_errors(),
                errors_by_kind: RequestErrorKinds {
                    response_timeouts: c.response_timeouts,
                    resets: c.resets,
                    bad_responses: c.bad_responses,
                    other: c.request_other_errors,
                },
                bad_responses_by_reason: c.bad_by_reason,
                in_flight_at_start: at_start.requests,
                in_flight_at_end: requests_at_end,
            },
            tls: (c.handshakes() + c.handshake_errors() > 0).then(|| HandshakeTotals {
                full: c.handshakes_full,
                resumed: c.handshakes_resumed,
                failed: c.handshake_errors(),
                resumed_share: HandshakeTotals::share(c.handshakes_full, c.handshakes_resumed),
                server_full: None,
                server_resumed: None,
            }),
        }
    }

    /// A whole run's counts: nothing in progress at its start, and at its end what the
    /// workers said they left when they stopped.
    pub fn of_run(c: &Counters) -> Self {
        Self::of(c, InProgress::default(), InProgress::default())
    }

    /// Why the counts do not add up, None when both identities hold.
    pub fn identities_broken(&self) -> Option<String> {
        let (c, r) = (&self.connections, &self.requests);
        let mut why = Vec::new();
        if !c.identity_holds() {
            why.push(format!(
                "connections: {} attempts + {} connecting at the start != {} established + {} \
                 errors + {} connecting at the end",
                c.attempts, c.connecting_at_start, c.established, c.errors, c.connecting_at_end
            ));
        }
        if !r.identity_holds() {
            why.push(format!(
                "requests: {} sent + {} in flight at the start != {} responses + {} errors + \
                 {} in flight at the end",
                r.sent, r.in_flight_at_start, r.responses, r.errors, r.in_flight_at_end
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_sums_every_counter_and_bad_responses_are_errors() {
        // Every field 1, through serde so a new field cannot be left out of the test.
        // Nested counts (bad responses by reason) too.
        fn set(v: &mut serde_json::Value) {
            for (_, x) in v.as_object_mut().unwrap() {
                if x.is_object() {
                    set(x);
                } else {
                    *x = 1.into();
                }
            }
        }
        fn check(v: &serde_json::Value) {
            for (k, x) in v.as_object().unwrap() {
                if x.is_object() {
                    check(x);
                } else {
                    assert_eq!(x, 2, "{k} was not summed");
                }
            }
        }
        let mut v = serde_json::to_value(Counters::default()).unwrap();
        set(&mut v);
        let one: Counters = serde_json::from_value(v).unwrap();
        let mut sum = Counters::default();
        sum.add(&one);
        sum.add(&one);
        check(&serde_json::to_value(sum).unwrap());
        // ALPN refusals are connection errors, HTTP/2 stream resets request errors.
        assert_eq!(sum.connection_errors(), 20);
        assert_eq!(sum.request_errors(), 10);
        assert_eq!(sum.errors(), 30);
        assert_eq!(sum.in_flight_at_end(), 4);
        let garbage = Counters {
            attempts: 5,
            established: 5,
            requests: 5,
            bad_responses: 5,
            ..Default::default()
        };
        assert_eq!(garbage.errors(), 5);
        assert_eq!(garbage.request_errors(), 5);
    }

    #[test]
    fn totals_state_both_identities_and_keep_the_flat_fields() {
        // A keep-alive window: 3 connects (1 refused), 40 requests, 2 in flight at its start.
        let c = Counters {
            attempts: 3,
            established: 2,
            refused: 1,
            requests: 40,
            responses: 39,
            resets: 1,
            requests_at_end: 1,
            ..Default::default()
        };
        let at_start = InProgress {
            connecting: 1,
            requests: 2,
        };
        let at_end = InProgress {
            connecting: 1,
            requests: 1,
        };
        let t = Totals::of(&c, at_start, at_end);
        assert_eq!(t.identities_broken(), None, "{t:?}");
        assert_eq!(t.requests.in_flight_at_end, 2);
        assert_eq!((t.errors, t.in_flight_at_end), (2, 3));
        let sum: u64 = serde_json::to_value(&t.errors_by_kind)
            .unwrap()
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(sum, t.errors);
        let broken = Totals::of(&c, InProgress::default(), at_end);
        let why = broken.identities_broken().unwrap();
        assert!(
            why.starts_with("connections: 3 attempts + 0 connecting"),
            "{why}"
        );
        assert!(why.contains("requests: 40 sent + 0 in flight"), "{why}");
    }

    #[test]
    fn statuses_are_good_failed_or_neither_by_one_rule() {
        let default = GoodStatuses::default();
        assert_eq!(default.class(200), StatusClass::Good);
        assert_eq!(default.class(204), StatusClass::Good);
        assert_eq!(default.class(304), StatusClass::Neither);
        assert_eq!(default.class(404), StatusClass::Failed);
        assert_eq!(default.class(503), StatusClass::Failed);
        let named = GoodStatuses(vec![200, 304, 404]);
        assert_eq!(named.class(200), StatusClass::Good);
        assert_eq!(named.class(304), StatusClass::Good);
        assert_eq!(named.class(404), StatusClass::Good);
        // Named statuses replace the 2xx default.
        assert_eq!(named.class(204), StatusClass::Neither);
        assert_eq!(named.class(301), StatusClass::Neither);
        assert_eq!(named.class(403), StatusClass::Failed);
        assert_eq!(named.class(503), StatusClass::Failed);
        let c = Counters {
            refused: 1,
            resets: 2,
            responses_failed: 3,
            ..Default::default()
        };
        assert_eq!((c.errors(), c.failures()), (3, 6));
    }

    #[test]
    fn totals_of_an_older_run_without_the_split_still_read() {
        let old = r#"{"attempts": 5, "established": 5, "responses": 5, "non2xx": 0,
            "errors": 0, "errors_by_kind": {"connect_timeouts": 0, "refused": 0, "resets": 0,
            "bad_responses": 0, "response_timeouts": 0, "addr_not_avail": 0, "out_of_fds": 0,
            "other": 0}, "in_flight_at_end": 0, "syn_in": null, "server_responses": null}"#;
        let t: Totals = serde_json::from_str(old).unwrap();
        assert_eq!(t.responses, 5);
        assert_eq!(t.requests, RequestTotals::default());
    }
}
