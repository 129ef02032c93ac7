#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""
The receiving end of the TX system tests (35-tx-socket.sh,
36-tx-hostile.sh): binds a UDP port on 127.0.0.1 (standard library
only, nothing of the project) and checks that exactly COUNT datagrams
arrive, in order, each the payload tx-raw(1) made for its sequence
number (bytes 0..7 the number, little endian; byte k >= 8 is
(seq + k) & 0xff; length LEN, or LEN - seq % 3 with --vary), all from
one source address (and --src-port when given); with --only-len,
datagrams of another length (other channels of the queue) are skipped. With --raw (root only)
a raw IPv4 socket also sees every datagram to the port and checks its
IPv4 header checksum, total length and UDP length. With --hello PORT
(45-tx-reply-peer.sh) it binds a port the kernel picks (--port 0) and
first sends --hello-count datagrams to 127.0.0.1:PORT from that socket,
as a peer of a server that replies to whoever sent last. Prints "ready
port=P" once bound (and its hellos sent), then one "ok ..." or
"FAIL ..." line; exits 0 or 1.
"""
import argparse
import select
import socket
import struct
import sys
import time

SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
SO_RXQ_OVFL = getattr(socket, "SO_RXQ_OVFL", 40)
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
SCM_TIMESTAMPNS = SO_TIMESTAMPNS


def big_rcvbuf(s):
    for opt in (SO_RCVBUFFORCE, socket.SO_RCVBUF):
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, 64 << 20)
            return
        except OSError:
            pass


# byte i of PATTERN is i & 0xff: the tail of any payload is one slice
PATTERN = bytes(range(256)) * (70000 // 256 + 2)


def expected(seq, length):
    head = seq.to_bytes(8, "little")[:length]
    off = (seq + 8) & 0xFF
    return head + PATTERN[off:off + max(length - 8, 0)]


def ip_checksum_ok(hdr):
    total = 0
    for i in range(0, len(hdr), 2):
        total += (hdr[i] << 8) | hdr[i + 1]
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


def fail(msg):
    print("FAIL " + msg, flush=True)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--len", type=int, required=True)
    ap.add_argument("--vary", action="store_true")
    ap.add_argument("--src-port", type=int, default=0)
    ap.add_argument("--raw", action="store_true")
    ap.add_argument("--timeout", type=float, default=60.0)
    # other channels of the queue share its destination: with this,
    # datagrams of another length are theirs, counted and not checked
    ap.add_argument("--only-len", action="store_true")
    ap.add_argument("--hello", type=int, default=0)
    ap.add_argument("--hello-count", type=int, default=1)
    a = ap.parse_args()

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    big_rcvbuf(s)
    # the kernel's drops at this socket, so that a gap is named as such
    s.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("127.0.0.1", a.port))
    raw = None
    if a.raw:
        raw = socket.socket(socket.AF_INET, socket.SOCK_RAW,
                            socket.IPPROTO_UDP)
        big_rcvbuf(raw)
    if a.hello:
        for i in range(a.hello_count):
            s.sendto(b"hello %d" % i, ("127.0.0.1", a.hello))
    print("ready port=%d" % s.getsockname()[1], flush=True)

    def length_of(seq):
        return a.len - seq % 3 if a.vary else a.len

    got = 0
    raw_got = 0
    nbytes = 0
    others = 0
    kdrops = 0
    t_first = t_last = 0.0
    src = None
    end = time.monotonic() + a.timeout
    socks = [s] + ([raw] if raw is not None else [])
    while got < a.count or (raw is not None and raw_got < a.count):
        left = end - time.monotonic()
        if left <= 0:
            fail("timed out: %d of %d datagrams, %d raw" %
                 (got, a.count, raw_got))
        r, _, _ = select.select(socks, [], [], left)
        if s in r:
            d, anc, _, peer = s.recvmsg(70000, socket.CMSG_SPACE(4) +
                                        socket.CMSG_SPACE(16))
            stamp = None
            for lvl, typ, val in anc:
                if lvl == socket.SOL_SOCKET and typ == SO_RXQ_OVFL:
                    kdrops = struct.unpack("I", val[:4])[0]
                if lvl == socket.SOL_SOCKET and typ == SCM_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", val[:16])
                    stamp = sec + nsec / 1e9
            if src is None:
                src = peer
            if peer != src:
                fail("datagram %d from %s, earlier ones from %s" %
                     (got, peer, src))
            if a.src_port and peer[1] != a.src_port:
                fail("source port %d, configured udp_src %d" %
                     (peer[1], a.src_port))
            if a.only_len and len(d) != a.len:
                others += 1
                continue
            # the kernel's arrival time, not when this script got to
            # read it: a late first read must not shorten the span
            if stamp is None:
                fail("no SO_TIMESTAMPNS on datagram %d" % got)
            if got == 0:
                t_first = stamp
            t_last = stamp
            nbytes += len(d)
            if got >= a.count:
                fail("more than %d datagrams" % a.count)
            want = expected(got, length_of(got))
            if d != want:
                seq = int.from_bytes(d[:8], "little") if len(d) >= 8 else -1
                fail("datagram %d: %d bytes (seq %d), want %d bytes%s" %
                     (got, len(d), seq, len(want),
                      " (the kernel dropped %d at this receiver's socket: "
                      "the receiver fell behind)" % kdrops if kdrops else ""))
            got += 1
        if raw is not None and raw in r:
            p = raw.recv(70000)
            ihl = (p[0] & 15) * 4
            if len(p) < ihl + 8:
                continue
            sport, dport, ulen = struct.unpack("!HHH", p[ihl:ihl + 6])
            if dport != a.port or p[12:16] != bytes([127, 0, 0, 1]):
                continue
            if p[0] >> 4 != 4 or not ip_checksum_ok(p[:ihl]):
                fail("raw datagram %d: bad IPv4 header checksum" % raw_got)
            tot = struct.unpack("!H", p[2:4])[0]
            if tot != len(p):
                fail("raw datagram %d: IPv4 total length %d, %d bytes" %
                     (raw_got, tot, len(p)))
            if ulen != tot - ihl:
                fail("raw datagram %d: UDP length %d, IPv4 payload %d" %
                     (raw_got, ulen, tot - ihl))
            seq = int.from_bytes(p[ihl + 8:ihl + 16], "little")
            if seq != raw_got or ulen - 8 != length_of(seq):
                fail("raw datagram %d: seq %d, UDP length %d" %
                     (raw_got, seq, ulen))
            raw_got += 1
    # nothing more may follow: a short look at the socket
    r, _, _ = select.select([s], [], [], 0.2)
    if r and not a.only_len:
        fail("a datagram past the %d expected" % a.count)
    # first to last datagram: the rate the sender kept
    print("ok count=%d src=%s:%d raw=%d bytes=%d secs=%.6f others=%d" %
          (got, src[0], src[1], raw_got, nbytes, t_last - t_first, others),
          flush=True)


main()
