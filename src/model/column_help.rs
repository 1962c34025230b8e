//! What each time-series column is, in a sentence: whose figure it is (the clients', the
//! server port's, the server's network namespace's, the machine's) and where it is read. Said
//! by OpenMetrics' HELP and wherever a figure needs explaining. A table of its own (rather than
//! a field of every column) so adding a column stays one line; a test holds every column to
//! having one.

use super::column::{col, Col};
use std::borrow::Cow;

const HELP: &[(Col, &str)] = &[
    (col::ATTEMPTS, "Connection attempts the load clients started per second"),
    (col::ESTABLISHED, "Connections the load clients saw established per second"),
    (col::RESPONSES, "Complete responses the load clients received per second, any status"),
    (col::BYTES_IN, "Bytes the load clients received per second (response heads and bodies)"),
    (col::ERRORS, "Connection errors and request errors at the load clients per second, together (each apart in connection_errors_per_s and request_errors_per_s)"),
    (col::CONNECT_TIMEOUTS, "Attempts whose connect did not complete within the timeout T, per second"),
    (col::REFUSED, "Attempts refused by a RST to the SYN, per second"),
    (col::RESETS, "Requests reset while being sent or answered (ECONNRESET, EPIPE), per second; a reset during the connect counts as refused"),
    (col::TARGET_RATE, "The arrival rate the load schedule aims at (open and sclient modes), attempts per second"),
    (col::CONNECT_P50, "Median connect time of the sample's completed connects, from the scheduled start"),
    (col::CONNECT_P90, "90th percentile connect time of the sample's completed connects, from the scheduled start"),
    (col::CONNECT_P99, "99th percentile connect time of the sample's completed connects, from the scheduled start"),
    (col::TOTAL_P50, "Median response time (scheduled start to last byte) of the sample's completed requests"),
    (col::TOTAL_P90, "90th percentile response time (scheduled start to last byte) of the sample's completed requests"),
    (col::TOTAL_P99, "99th percentile response time (scheduled start to last byte) of the sample's completed requests"),
    (col::IN_FLIGHT, "Connections open at the load clients: connecting, carrying a request, or kept alive between requests (closed clients thinking, a pool's idle connections)"),
    (col::LAG_MAX, "How late the load workers started their most delayed attempt in the sample"),
    (col::WORKER_CPU, "CPU the load worker processes used, percent of one core"),
    (col::SERVER_RESPONSES, "Responses the server counted itself (its own counter or access log), per second"),
    (col::SYN_IN, "SYNs arriving at the server port per second (pcap); without a capture, the server namespace's PassiveOpens + ListenDrops per second (all ports)"),
    (col::SYN_IN_ESTIMATED, "1 when syn_in_per_s is the kernel-counter estimate for the whole server namespace, 0 when counted by pcap on the server port"),
    (col::SYNACK_OUT_PER_S, "SYN-ACKs the server port sent per second (pcap)"),
    (col::RST_IN_PER_S, "RSTs arriving at the server port per second (pcap)"),
    (col::RST_OUT_PER_S, "RSTs the server port sent per second (pcap)"),
    (col::SYN_RETRANS_PER_S, "SYNs arriving at the server port again (same 4-tuple and sequence number: client retries) per second (pcap)"),
    (col::PCAP_DROPS, "Packets the kernel dropped before the capture of the server port saw them, since it started"),
    (col::PCAP_IF_DROPS, "Packets the capture interface dropped, since the capture started"),
    (col::ACCEPT_QUEUE, "Connections waiting in the server port's accept queues (sock_diag, LISTEN sockets)"),
    (col::CONN_RECVQ_MEAN, "Bytes waiting in the receive queue of the server port's established connections, mean per connection: sent by the clients, not yet read by the server (sock_diag); over HTTP/2 the queue is here, not in the accept queue"),
    (col::CONN_RECVQ_MAX, "Bytes waiting in the receive queue of the server port's busiest established connection (sock_diag)"),
    (col::CONN_SENDQ_MEAN, "Bytes in the send queue of the server port's established connections, mean per connection: written by the server, not yet acknowledged by the clients (sock_diag)"),
    (col::CONN_SENDQ_MAX, "Bytes in the send queue of the server port's fullest established connection (sock_diag)"),
    (col::CONN_RETRANS, "Segments retransmitted over the lives of the server port's established connections, summed (tcp_info total_retrans): one lost segment stalls every HTTP/2 stream of its connection"),
    (col::ACCEPT_QUEUE_LIMIT, "The server port's accept-queue limit: its listen backlog after the somaxconn cap (sock_diag)"),
    (col::ACCEPT_QUEUE_WAIT_OLDEST, "How long the oldest connection waiting in the server port's accept queue has waited since its handshake completed, ms (sock_diag: the inode-0 ESTABLISHED/CLOSE-WAIT sockets, tcp_info last_data_sent); 0 when none waits"),
    (col::ACCEPT_QUEUE_WAIT_MEAN, "How long the connections waiting in the server port's accept queue have waited since their handshakes completed, mean, ms (sock_diag, tcp_info); 0 when none waits. A waiting one's age is about half its whole wait: Little's law takes the queue's depth"),
    (col::SPLIT_CONNECT, "The latency split's connect: per completed response of the sample, its scheduled start to its request going out (its connection's connect and handshake for a connection's first request; over HTTP/2 and HTTP/3 the part while its connection was not yet usable), mean, ms; with split_queue_ms, split_service_ms and split_transfer_ms it adds up to the mean response time"),
    (col::SPLIT_QUEUE, "The latency split's accept queue: the built-in server's exact waits (handshake completion to accept, tcp_info) of the connections it accepted in the sample, their mean for each response that was its connection's first, over the responses, ms; over HTTP/2 and HTTP/3 plus each stream's wait for a slot on its usable connection; empty where neither is measured (its time is then in split_transfer_ms)"),
    (col::SPLIT_SERVICE, "The latency split's service: the server's own time per request, mean over the sample's requests, ms: the built-in server's clock from the request read to its response starting to go out (its work, not the response's size); nginx's `$request_time` / Apache's `%D` from their access log (`rt:` / `rt_us:` fields, run on to the response's last byte); empty where the server does not measure it (a log without the field: its time is then in split_transfer_ms)"),
    (col::SPLIT_TRANSFER, "The latency split's transfer: the rest of the mean response time after connect, accept queue and service (the request's travel, the response's bytes going out and travelling, the server's handshake completing after the client's, and its time between accept and reading the request), ms"),
    (col::CONNECT_RETRANS, "Share of the sample's completed connects that took 1 s or more (the SYN's initial retransmission timeout): those that waited for a SYN or SYN-ACK retransmission, %"),
    (col::SYN_RECV, "Handshakes of the server port in SYN-RCVD (sock_diag)"),
    (col::ESTABLISHED_SOCKS, "ESTABLISHED sockets of the server port (sock_diag)"),
    (col::FIN_WAIT, "FIN-WAIT-1 and FIN-WAIT-2 sockets of the server port (sock_diag)"),
    (col::CLOSE_WAIT, "CLOSE-WAIT sockets of the server port (sock_diag)"),
    (col::LAST_ACK, "LAST-ACK sockets of the server port (sock_diag)"),
    (col::CLOSING, "CLOSING sockets of the server port (sock_diag)"),
    (col::TIME_WAIT, "TIME_WAIT sockets of the whole server network namespace, all ports (/proc/net/sockstat tw)"),
    (col::TCP_INUSE, "TCP sockets in use in the whole server network namespace, every state but TIME_WAIT (/proc/net/sockstat inuse)"),
    (col::TCP_ORPHAN, "Orphaned TCP sockets (closed, not yet gone) of the whole machine (/proc/net/sockstat orphan)"),
    (col::TCP_MEM_PAGES, "Memory pages held by TCP buffers on the whole machine (/proc/net/sockstat mem)"),
    (col::LISTEN_OVERFLOWS, "Connections dropped because an accept queue was full, per second, whole server namespace (TcpExt ListenOverflows)"),
    (col::LISTEN_DROPS_PER_S, "SYNs and final ACKs dropped at listening sockets per second, whole server namespace (TcpExt ListenDrops)"),
    (col::PASSIVE_OPENS_PER_S, "Handshakes completed by listening sockets per second, whole server namespace (Tcp PassiveOpens)"),
    (col::ACTIVE_OPENS_PER_S, "Connects started per second, whole server namespace (Tcp ActiveOpens)"),
    (col::ATTEMPT_FAILS_PER_S, "Connections that failed before ESTABLISHED per second, whole server namespace (Tcp AttemptFails)"),
    (col::ESTAB_RESETS_PER_S, "ESTABLISHED connections reset per second, whole server namespace (Tcp EstabResets)"),
    (col::RETRANS_SEGS_PER_S, "TCP segments retransmitted per second, whole server namespace (Tcp RetransSegs)"),
    (col::OUT_RSTS_PER_S, "RSTs sent per second, whole server namespace (Tcp OutRsts)"),
    (col::TCP_TIMEOUTS_PER_S, "TCP retransmission timeouts per second, whole server namespace (TcpExt TCPTimeouts)"),
    (col::SYNCOOKIES_SENT_PER_S, "SYN cookies sent per second, whole server namespace (TcpExt SyncookiesSent)"),
    (col::REQQ_FULL_DROPS_PER_S, "SYNs dropped because a SYN queue was full, per second, whole server namespace (TcpExt TCPReqQFullDrop)"),
    (col::REQQ_FULL_COOKIES_PER_S, "SYNs answered with a SYN cookie because a SYN queue was full, per second, whole server namespace (TcpExt TCPReqQFullDoCookies)"),
    (col::SYNCOOKIES_RECV_PER_S, "SYN cookies that came back valid (a connection made from a cookie) per second, whole server namespace (TcpExt SyncookiesRecv)"),
    (col::SYNCOOKIES_FAILED_PER_S, "SYN cookies that came back invalid (the ACK dropped) per second, whole server namespace (TcpExt SyncookiesFailed)"),
    (col::BACKLOG_DROPS_PER_S, "Segments dropped because a socket's backlog was full while the server held the socket, per second, whole server namespace (TcpExt TCPBacklogDrop)"),
    (col::RCVQ_DROPS_PER_S, "Segments dropped because a socket's receive buffer was full, per second, whole server namespace (TcpExt TCPRcvQDrop)"),
    (col::ZERO_WINDOW_DROPS_PER_S, "Segments dropped because they came past a zero receive window, per second, whole server namespace (TcpExt TCPZeroWindowDrop)"),
    (col::TIME_WAIT_OVERFLOWS_PER_S, "Closing sockets not kept in TIME_WAIT because the table was full (tcp_max_tw_buckets), per second, whole server namespace (TcpExt TCPTimeWaitOverflow)"),
    (col::ABORT_ON_MEMORY_PER_S, "Connections aborted because TCP ran out of memory, per second, whole server namespace (TcpExt TCPAbortOnMemory)"),
    (col::UDP_RCVBUF_ERRORS_PER_S, "UDP datagrams dropped because a socket's receive buffer was full, per second, whole server namespace (Udp RcvbufErrors)"),
    (col::UDP_NO_PORTS_PER_S, "UDP datagrams that arrived for a port without a socket per second (answered with ICMP port unreachable), whole server namespace (Udp NoPorts)"),
    (col::UDP_IN_DATAGRAMS_PER_S, "UDP datagrams delivered to a socket per second, whole server namespace (Udp InDatagrams): what the sockets received, not what was dropped"),
    (col::UDP_RCV_QUEUE, "Bytes waiting in the server port's UDP sockets' receive queues (sock_diag's SK_MEMINFO_RMEM_ALLOC, with the kernel's overhead per datagram), summed over the port's sockets: a QUIC server's queue, as the accept queue is a TCP server's"),
    (col::UDP_RCVBUF, "The receive buffer of the server port's UDP sockets (the largest; SO_RCVBUF as the kernel keeps it, doubled): past it, datagrams are dropped (Udp RcvbufErrors)"),
    (col::RMEM_MAX, "The largest receive buffer a server may ask for with SO_RCVBUF (net.core.rmem_max), machine-wide"),
    (col::PORT_UDP_DROPS, "Datagrams the server port's UDP sockets dropped since they were opened (their sk_drops by sock_diag, SK_MEMINFO_DROPS): a full receive buffer, a bad checksum"),
    (col::PORT_UDP_DROPS_PER_S, "Datagrams the server port's UDP sockets dropped per second (their sk_drops by sock_diag): the port's own share of Udp RcvbufErrors and InErrors"),
    (col::QUIC_INITIAL_IN_PER_S, "QUIC Initial packets arriving at the server's UDP port per second (pcap: long header, type Initial, QUIC v1 and v2), a client's later Initials included: the QUIC counterpart of syn_in_per_s"),
    (col::QUIC_FIRST_INITIAL_PER_S, "QUIC connection attempts arriving at the server's UDP port per second: each client connection's first Initial (pcap; later ones, same 4-tuple and source connection ID, are retransmissions, a ClientHello's second packet or ACKs)"),
    (col::QUIC_INITIAL_IN_TOTAL, "QUIC Initial packets that arrived at the server's UDP port since the probes started (pcap)"),
    (col::QUIC_FIRST_INITIAL_TOTAL, "QUIC connection attempts (first Initials) that arrived at the server's UDP port since the probes started (pcap)"),
    (col::UDP_IN_ERRORS_PER_S, "UDP datagrams received in error per second (receive buffer full included), whole server namespace (Udp InErrors)"),
    (col::CPU_USER, "Share of the whole machine's CPU time in user mode (/proc/stat)"),
    (col::CPU_NICE_PCT, "Share of the whole machine's CPU time in niced user mode (/proc/stat)"),
    (col::CPU_SYSTEM, "Share of the whole machine's CPU time in the kernel, system calls (/proc/stat)"),
    (col::CPU_IRQ, "Share of the whole machine's CPU time in hardware interrupts (/proc/stat)"),
    (col::CPU_SOFTIRQ, "Share of the whole machine's CPU time in softirqs, where packets are received (/proc/stat)"),
    (col::CPU_IOWAIT_PCT, "Share of the whole machine's CPU time idle waiting for I/O (/proc/stat)"),
    (col::CPU_IDLE, "Share of the whole machine's CPU time idle (/proc/stat)"),
    (col::CPU_STEAL_PCT, "Share of the whole machine's CPU time taken by the hypervisor (/proc/stat)"),
    (col::CTXT_PER_S, "Context switches of the whole machine per second (/proc/stat ctxt)"),
    (col::INTR_PER_S, "Interrupts of the whole machine per second (/proc/stat intr)"),
    (col::NET_RX_SOFTIRQ_PER_S, "NET_RX softirqs (packet receive) of the whole machine per second (/proc/softirqs)"),
    (col::NET_TX_SOFTIRQ_PER_S, "NET_TX softirqs (packet transmit) of the whole machine per second (/proc/softirqs)"),
    (col::PROCS_RUNNING, "Runnable threads on the whole machine (/proc/stat procs_running)"),
    (col::PROCS_BLOCKED, "Threads blocked on I/O on the whole machine (/proc/stat procs_blocked)"),
    (col::SERVER_PROCS, "Processes of the server: its pid and descendants"),
    (col::SERVER_THREADS, "Threads of the server's processes"),
    (col::SERVER_CPU_USER_PCT, "User-mode CPU of the server's processes and the children they waited for (CGI), percent of one core"),
    (col::SERVER_CPU_SYS_PCT, "Kernel-mode CPU of the server's processes and the children they waited for (CGI), percent of one core"),
    (col::SERVER_RSS_MB, "Resident memory of the server's processes"),
    (col::PROBE_CPU, "CPU synlab's probe threads used, percent of one core"),
    (col::SYN_IN_TOTAL, "SYNs that arrived at the server port since the capture started (pcap)"),
    (col::SYN_RETRANS_TOTAL, "Retransmitted SYNs that arrived at the server port since the capture started (pcap)"),
    (col::SYNACK_OUT_TOTAL, "SYN-ACKs the server port sent since the capture started (pcap)"),
    (col::RST_IN_TOTAL, "RSTs that arrived at the server port since the capture started (pcap)"),
    (col::RST_OUT_TOTAL, "RSTs the server port sent since the capture started (pcap)"),
    (col::PASSIVE_OPENS_TOTAL, "Handshakes completed by listening sockets since the probes started, whole server namespace (Tcp PassiveOpens)"),
    (col::LISTEN_DROPS_TOTAL, "SYNs and final ACKs dropped at listening sockets since the probes started, whole server namespace (TcpExt ListenDrops)"),
    (col::LISTEN_OVERFLOWS_TOTAL, "Connections dropped at a full accept queue since the probes started, whole server namespace (TcpExt ListenOverflows)"),
    (col::ACTIVE_OPENS_TOTAL, "Connects started since the probes started, whole server namespace (Tcp ActiveOpens)"),
    (col::UDP_RCVBUF_ERRORS_TOTAL, "UDP datagrams dropped at a full socket receive buffer since the probes started, whole server namespace (Udp RcvbufErrors): with the port's port_udp_drops, the kernel's side of the HTTP/3 drops identity"),
    (col::ROUTER_FRAMES_PER_S, "Frames the delay router relayed per second, both directions of every path"),
    (col::ROUTER_LOST_PER_S, "Frames the delay router dropped as the paths' configured loss, per second"),
    (col::ROUTER_QUEUE_DROPS_PER_S, "Frames the delay router dropped at a full bandwidth queue, per second"),
    (col::ROUTER_RING_DROPS_PER_S, "Frames dropped at the delay router's ports because it fell behind (not the path's loss), per second"),
    (col::ROUTER_CPU_PCT, "CPU the delay router used, percent of one core"),
    (col::ROUTER_QUEUE, "Frames waiting in the delay router's queues"),
    (col::ROUTER_LATE_P50_US, "Median departure error of the delay router: send time minus scheduled departure"),
    (col::ROUTER_LATE_P99_US, "99th percentile departure error of the delay router: send time minus scheduled departure"),
    (col::PORT_TIME_WAIT, "TIME_WAIT sockets of the server port (sock_diag); time_wait is the whole namespace's"),
    (col::PORT_LISTEN_DROPS, "SYNs and handshakes the server port's listening sockets dropped since they began listening (their sk_drops by sock_diag, SK_MEMINFO_DROPS); the server port's own share of ListenDrops, accept-queue overflows included"),
    (col::PORT_LISTEN_DROPS_PER_S, "SYNs and handshakes the server port's listening sockets dropped per second (their sk_drops by sock_diag): the port's own listen drops and overflows, where listen_drops_per_s counts every port of the namespace"),
    (col::REQUESTS, "Requests the load clients began per second (keep-alive carries many on one connection)"),
    (col::CONNECTION_ERRORS, "Connects that failed at the load clients per second (timeouts, refused, ports or descriptors out, other)"),
    (col::REQUEST_ERRORS, "Requests that failed at the load clients per second (response timeouts, resets mid-request, bad responses, other)"),
    (col::RESPONSE_TIMEOUTS, "Requests whose response did not complete within the response timeout, per second"),
    (col::BAD_RESPONSES, "Responses the load clients could not parse as HTTP, per second"),
    (col::ADDR_NOT_AVAIL, "Connection attempts that found no free ephemeral port at the load clients (EADDRNOTAVAIL), per second"),
    (col::OUT_OF_FDS, "Connection attempts the load clients could not make for want of a file descriptor (EMFILE, ENFILE), per second"),
    (col::CONNECT_OTHER_ERRORS, "Connection attempts that failed otherwise (an unconfigured source address, ENETUNREACH, ...), per second"),
    (col::REQUEST_OTHER_ERRORS, "Requests that failed otherwise while being sent or answered, per second"),
    (col::POOL_WAITS, "Scheduled requests that found no idle connection in the pool and waited for one, per second"),
    (col::CONNECTING, "Connects in progress at the load clients (SYN sent, not yet established)"),
    (col::REQUESTS_IN_FLIGHT, "Requests sent by the load clients and not yet answered"),
    (col::SERVER_WORKERS, "Processes or threads the built-in server serves with (its own report; prefork and threaded grow up to max_workers)"),
    (col::SERVER_BUSY, "Server processes or threads busy with a connection: the built-in server's own count (the event server's one loop is 0 or 1), Apache's scoreboard (mod_status BusyWorkers)"),
    (col::POOL_CONNECTIONS, "Persistent connections the load clients keep open in their pool (open mode with a request rate)"),
    (col::SERVER_CORES_USER, "Share of the server's own CPUs' time in user mode, nice included (/proc/stat of those CPUs)"),
    (col::SERVER_CORES_SYSTEM, "Share of the server's own CPUs' time in the kernel, system calls (/proc/stat of those CPUs)"),
    (col::SERVER_CORES_IRQ, "Share of the server's own CPUs' time in hardware interrupts, the steering's IPIs included (/proc/stat of those CPUs)"),
    (col::SERVER_CORES_SOFTIRQ, "Share of the server's own CPUs' time in softirqs, where the packets it receives are processed (/proc/stat of those CPUs)"),
    (col::SERVER_CORES_STEAL, "Share of the server's own CPUs' time taken by the hypervisor (/proc/stat of those CPUs)"),
    (col::SERVER_CORES_IDLE, "Share of the server's own CPUs' time idle, iowait included (/proc/stat of those CPUs)"),
    (col::SERVER_CORES_NET_RX, "NET_RX softirqs (packet receive) on the server's own CPUs per second (/proc/softirqs of those CPUs)"),
    (col::LOAD_CORES_USER, "Share of the load's CPUs' time (workers, delay router, controller) in user mode, nice included (/proc/stat of those CPUs)"),
    (col::LOAD_CORES_SYSTEM, "Share of the load's CPUs' time in the kernel, system calls (/proc/stat of those CPUs)"),
    (col::LOAD_CORES_IRQ, "Share of the load's CPUs' time in hardware interrupts (/proc/stat of those CPUs)"),
    (col::LOAD_CORES_SOFTIRQ, "Share of the load's CPUs' time in softirqs, where the packets the load receives are processed (/proc/stat of those CPUs)"),
    (col::LOAD_CORES_IDLE, "Share of the load's CPUs' time idle, iowait included (/proc/stat of those CPUs)"),
    (col::CONTROLLER_CPU, "CPU synlab's controller process used (its run loop or TUI, probes and readers), percent of one core (/proc/self/stat)"),
    (col::LOAD_CPU, "CPU the load side's processes used together: the load workers, the delay router and the controller, percent of one core"),
    (col::HANDSHAKES, "TLS handshakes the load clients completed per second, full and resumed"),
    (col::FULL_HANDSHAKES, "Full TLS handshakes (no session resumed) the load clients completed per second"),
    (col::RESUMED_HANDSHAKES, "TLS handshakes that resumed a session (ticket or session id) at the load clients, per second"),
    (col::HANDSHAKE_ERRORS, "TLS handshakes that failed at the load clients per second (timeouts, alerts, bad certificates, protocol errors)"),
    (col::RESUMED_SHARE, "Share of the sample's completed TLS handshakes that resumed a session, percent"),
    (col::H2_STREAMS_MAX, "HTTP/2: the most requests (streams) in flight on one client connection in the interval"),
    (col::H2_STREAMS_LIMIT, "HTTP/2: the server's advertised SETTINGS_MAX_CONCURRENT_STREAMS, as the clients last read it"),
    (col::H2_REFUSED_STREAMS, "HTTP/2 requests the server refused (REFUSED_STREAM) or left unprocessed above a GOAWAY, sent again on another connection, per second"),
    (col::H2_STREAM_RESETS, "HTTP/2 requests the server reset with another code (request errors), per second"),
    (col::H2_GOAWAYS, "HTTP/2 GOAWAYs the clients received (the connection finishes its streams and is replaced), per second"),
    (col::H2_ALPN_REFUSED, "TLS connections whose server picked another ALPN protocol than h2 (connection errors), per second"),
    (col::H2_SETUPS, "HTTP/2 connection setups done (connect, TLS, the server's SETTINGS in), per second"),
    (col::H2_FLOW_STALL, "Time the clients' HTTP/2 flow-control windows stood at 0 (stream and connection), ms per second"),
    (col::QUIC_HANDSHAKES_FULL, "QUIC handshakes the load clients completed in full (the server's certificate sent and verified), per second; over HTTP/3 only"),
    (col::QUIC_HANDSHAKES_RESUMED, "QUIC handshakes the load clients completed by resuming a stored TLS session, without 0-RTT data, per second"),
    (col::QUIC_HANDSHAKES_0RTT, "QUIC handshakes resumed with 0-RTT early data the server accepted (the first requests went before the handshake completed), per second"),
    (col::QUIC_HANDSHAKE_MS, "Mean time of the sample's completed QUIC handshakes (first Initial sent to the handshake confirmed at the client), ms"),
    (col::QUIC_RETRY, "QUIC Retry packets the load clients received (the server validating their address before it spends a handshake), per second"),
    (col::QUIC_PACKETS_SENT, "UDP datagrams the load clients' QUIC stack sent per second (each datagram of a GSO batch counted)"),
    (col::QUIC_PACKETS_RECV, "UDP datagrams the load clients' QUIC stack received per second"),
    (col::QUIC_BYTES_SENT, "UDP payload bytes the load clients' QUIC stack sent per second"),
    (col::QUIC_BYTES_RECV, "UDP payload bytes the load clients' QUIC stack received per second"),
    (col::QUIC_LOST_PACKETS, "Packets the load clients' QUIC stack declared lost (their frames sent again), per second: the client's own view of loss on the path"),
    (col::QUIC_HANDSHAKE_TIMEOUTS, "QUIC connections given up before their handshake completed (T, or a closed client's response timeout), per second: Initials the server's kernel dropped end here"),
    (col::QUIC_IDLE_TIMEOUTS, "Established QUIC connections that went silent past the idle timeout, per second"),
    (col::QUIC_REFUSED, "QUIC connections the server refused (CONNECTION_REFUSED), per second"),
    (col::QUIC_CLOSED_BY_SERVER, "QUIC connections the server closed with a transport or HTTP/3 error code (other than refusing them), per second"),
    (col::QUIC_OTHER_ERRORS, "QUIC connections ended by a stateless reset, no version in common, or a protocol error the clients' stack found, per second"),
    (col::H2_RESETS_NO_ERROR, "HTTP/2 requests the server reset with NO_ERROR (0x0): the server ended the stream early with no error (nginx: a response sent before the request body was read), per second"),
    (col::H2_RESETS_PROTOCOL_ERROR, "HTTP/2 requests the server reset with PROTOCOL_ERROR (0x1): the server found the stream's frames or headers malformed, per second"),
    (col::H2_RESETS_INTERNAL_ERROR, "HTTP/2 requests the server reset with INTERNAL_ERROR (0x2): the server failed while serving the stream (nginx: an upstream or handler failure), per second"),
    (col::H2_RESETS_FLOW_CONTROL_ERROR, "HTTP/2 requests the server reset with FLOW_CONTROL_ERROR (0x3): the client sent beyond the stream's flow-control window, per second"),
    (col::H2_RESETS_STREAM_CLOSED, "HTTP/2 requests the server reset with STREAM_CLOSED (0x5): a frame arrived for a stream the server had already closed, per second"),
    (col::H2_RESETS_CANCEL, "HTTP/2 requests the server reset with CANCEL (0x8): the server no longer wanted the stream (Apache: a request it abandoned), per second"),
    (col::H2_RESETS_ENHANCE_YOUR_CALM, "HTTP/2 requests the server reset with ENHANCE_YOUR_CALM (0xb): the server judged the client too aggressive and shed the stream, per second"),
    (col::H2_RESETS_HTTP_1_1_REQUIRED, "HTTP/2 requests the server reset with HTTP_1_1_REQUIRED (0xd): the server wants the request over HTTP/1.1, per second"),
    (col::H2_RESETS_OTHER, "HTTP/2 requests the server reset with any other code (SETTINGS_TIMEOUT, FRAME_SIZE_ERROR, COMPRESSION_ERROR, CONNECT_ERROR, INADEQUATE_SECURITY, codes RFC 9113 does not name; run.log names each), per second"),
    (col::HANDSHAKING, "TLS handshakes in progress at the load clients (connect done, not yet established)"),
    (col::HANDSHAKE_P50, "Median duration of the sample's completed TLS handshakes, from the connect's end"),
    (col::HANDSHAKE_P90, "90th percentile duration of the sample's completed TLS handshakes, from the connect's end"),
    (col::HANDSHAKE_P99, "99th percentile duration of the sample's completed TLS handshakes, from the connect's end"),
    (col::SERVER_FULL_HANDSHAKES, "Full TLS handshakes the server counted itself (its own counter over TCP, or its access log's session-reuse field, per request), per second; over HTTP/3 the built-in server's are server_quic_handshakes_per_s"),
    (col::SERVER_RESUMED_HANDSHAKES, "Resumed TLS handshakes the server counted itself (its own counter over TCP, or its access log's session-reuse field, per request), per second; over HTTP/3 the built-in server's are server_quic_handshakes_per_s"),
    (col::SERVER_QUIC_HANDSHAKES, "QUIC handshakes the built-in server completed, by its own count, per second (HTTP/3; full and resumed together: its QUIC stack does not say which resumed)"),
    (col::SERVER_QUIC_RETRIES, "QUIC Retry packets the built-in server sent, by its own count, per second (HTTP/3, Retry on)"),
];

impl Col {
    /// What the figure is, whose it is and where it is read, in a sentence (OpenMetrics' HELP).
    pub fn help(self) -> Cow<'static, str> {
        let fixed = self.figure();
        let text = HELP
            .iter()
            .find(|(c, _)| *c == fixed)
            .map_or("", |(_, h)| *h);
        match (self.path(), self.class()) {
            (Some(p), _) => Cow::Owned(format!(
                "{text}, of the clients on network path {}",
                p.as_str()
            )),
            (_, Some(c)) => Cow::Owned(format!(
                "{text}, of the requests of class {} (and the connections opened for them)",
                c.as_str()
            )),
            (None, None) => Cow::Borrowed(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PathName;

    #[test]
    fn every_column_says_what_it_is_not_its_name_again() {
        for c in col::ALL {
            let h = c.help();
            assert!(h.len() > 20, "{c} has no help");
            // The kernel's own name of a source may appear in parentheses, not as the text.
            assert!(!h.starts_with(&*c.name()), "{c}: `{h}` repeats the name");
            assert!(!h.chars().next().unwrap().is_lowercase(), "{c}: `{h}`");
        }
        assert_eq!(
            HELP.len(),
            col::ALL.len(),
            "one help line per column, no more"
        );
        let p = col::TOTAL_P99.of_path(PathName::new("wan"));
        assert!(p.help().ends_with("on network path wan"), "{}", p.help());
        assert!(p.help().starts_with("99th percentile response time"));
        let c = col::RESPONSES.of_class(crate::model::ClassName::new("static"));
        assert!(
            c.help().contains("of the requests of class static"),
            "{}",
            c.help()
        );
    }
}
