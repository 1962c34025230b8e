//! The client's event counters: one type for a worker's per-interval deltas and for the sums
//! the controller folds them into, with one `add` and one rule for what counts as an error.

use serde::{Deserialize, Serialize};

/// Counts of client events over some span of time (a report interval, a sample, a point, a run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub attempts: u64,
    pub established: u64,
    pub connect_timeouts: u64,
    /// ECONNREFUSED (an RST in answer to the SYN).
    pub refused: u64,
    /// ECONNRESET / EPIPE after establishment.
    pub resets: u64,
    /// EADDRNOTAVAIL: the client ran out of ephemeral ports.
    pub addr_not_avail: u64,
    /// EMFILE / ENFILE: out of descriptors.
    pub out_of_fds: u64,
    pub other_errors: u64,
    /// Arrivals not started because the D cap was reached (open mode).
    pub client_cap_drops: u64,
    pub requests: u64,
    pub responses: u64,
    pub responses_2xx: u64,
    pub responses_non2xx: u64,
    pub response_timeouts: u64,
    /// Responses that were not HTTP, or connections closed before the response was complete.
    #[serde(default)]
    pub bad_responses: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Scheduled starts and how late they were in sum (us).
    pub scheduled: u64,
    pub lag_us_sum: u64,
    /// Connections still open when the worker stopped (not finished: neither responses nor
    /// errors).
    #[serde(default)]
    pub in_flight_at_end: u64,
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
            resets,
            addr_not_avail,
            out_of_fds,
            other_errors,
            client_cap_drops,
            requests,
            responses,
            responses_2xx,
            responses_non2xx,
            response_timeouts,
            bad_responses,
            bytes_in,
            bytes_out,
            scheduled,
            lag_us_sum,
            in_flight_at_end,
        } = *o;
        self.attempts += attempts;
        self.established += established;
        self.connect_timeouts += connect_timeouts;
        self.refused += refused;
        self.resets += resets;
        self.addr_not_avail += addr_not_avail;
        self.out_of_fds += out_of_fds;
        self.other_errors += other_errors;
        self.client_cap_drops += client_cap_drops;
        self.requests += requests;
        self.responses += responses;
        self.responses_2xx += responses_2xx;
        self.responses_non2xx += responses_non2xx;
        self.response_timeouts += response_timeouts;
        self.bad_responses += bad_responses;
        self.bytes_in += bytes_in;
        self.bytes_out += bytes_out;
        self.scheduled += scheduled;
        self.lag_us_sum += lag_us_sum;
        self.in_flight_at_end += in_flight_at_end;
    }

    /// Every failed request a person would count: connections that never got a response.
    /// Malformed or truncated responses are errors, not responses.
    pub fn errors(&self) -> u64 {
        self.connect_timeouts
            + self.refused
            + self.resets
            + self.addr_not_avail
            + self.out_of_fds
            + self.other_errors
            + self.response_timeouts
            + self.bad_responses
    }
}

/// Counts of a point or a run as summary.json gives them, to hold against a server's log or
/// a packet capture: every attempt ends as a response, an error, or in flight at the end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub attempts: u64,
    pub established: u64,
    /// Complete HTTP responses, any status.
    pub responses: u64,
    pub non2xx: u64,
    pub errors: u64,
    pub errors_by_kind: ErrorKinds,
    /// Attempts neither answered nor failed when the window (or the run) ended.
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
}

impl Totals {
    /// The counts of `c`; `in_flight_at_end` is what was still open when they were taken.
    pub fn of(c: &Counters, in_flight_at_end: u64) -> Self {
        Totals {
            attempts: c.attempts,
            established: c.established,
            responses: c.responses,
            non2xx: c.responses_non2xx,
            errors: c.errors(),
            errors_by_kind: ErrorKinds {
                connect_timeouts: c.connect_timeouts,
                refused: c.refused,
                resets: c.resets,
                bad_responses: c.bad_responses,
                response_timeouts: c.response_timeouts,
                addr_not_avail: c.addr_not_avail,
                out_of_fds: c.out_of_fds,
                other: c.other_errors,
            },
            in_flight_at_end,
            syn_in: None,
            syn_retrans: None,
            client_active_opens: None,
            server_responses: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_sums_every_counter_and_bad_responses_are_errors() {
        let one = Counters {
            attempts: 1,
            established: 1,
            connect_timeouts: 1,
            refused: 1,
            resets: 1,
            addr_not_avail: 1,
            out_of_fds: 1,
            other_errors: 1,
            client_cap_drops: 1,
            requests: 1,
            responses: 1,
            responses_2xx: 1,
            responses_non2xx: 1,
            response_timeouts: 1,
            bad_responses: 1,
            bytes_in: 1,
            bytes_out: 1,
            scheduled: 1,
            lag_us_sum: 1,
            in_flight_at_end: 1,
        };
        let mut sum = Counters::default();
        sum.add(&one);
        sum.add(&one);
        // Every field doubled: serialise and check each value is 2.
        let v = serde_json::to_value(sum).unwrap();
        for (k, x) in v.as_object().unwrap() {
            assert_eq!(x, 2, "{k} was not summed");
        }
        assert_eq!(sum.errors(), 16);
        let garbage = Counters {
            attempts: 5,
            bad_responses: 5,
            ..Default::default()
        };
        assert_eq!(garbage.errors(), 5);
    }
}
