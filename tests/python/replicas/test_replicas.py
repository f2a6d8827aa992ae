"""Many myops-server replicas behind one client target, as on Kubernetes behind a headless
Service: the Python client (over the C++ client) balances calls over them with gRPC's
round_robin, retries a lost replica's calls on another one, stops sending to a draining
replica once its health flips (health_checking=True), and picks up a replica added behind
a DNS name once the servers' --max-connection-age makes it re-resolve.

Each replica is a real myops-server process on a loopback address; the response's
"myops-replica" metadata (Timing.replica) says which one served a call.
"""

from __future__ import annotations

import collections
import signal
import threading

import myops_client
import numpy as np

from myops_testing import free_port, poll

from replica_helpers import DnsServer, Replica, ipv4_target

X = np.arange(16, dtype=np.float32)
Y = X * np.float32(2) + np.float32(1)


def served_by(client: myops_client.Client) -> str:
    """One call; checks its result and returns the replica that served it."""
    y, timing = client.scale_shift(X, 2.0, 1.0, return_timing=True)
    np.testing.assert_array_equal(y, Y)
    return timing.replica


def connected_to_all(client: myops_client.Client, names: set[str]) -> bool:
    """Calls until every replica in `names` has served one (each connection is up)."""
    seen: set[str] = set()
    return poll(lambda: seen.add(served_by(client)) or seen >= names, timeout=60, interval=0)


def test_every_response_names_its_replica(replicas):
    (r,) = replicas(1)
    with myops_client.Client(r.address) as client:
        assert served_by(client) == "r0"


def test_round_robin_spreads_3000_requests_evenly(replicas):
    """Round robin, not merely spread: consecutive calls take the replicas in turn, so
    (nearly) every 3 calls in a row reach 3 different replicas; a random picker does so
    for only 2 in 9 such windows, however even its totals."""
    group = replicas(3)
    names = {r.name for r in group}
    with myops_client.Client(ipv4_target(group)) as client:
        assert connected_to_all(client, names)
        sequence = [served_by(client) for _ in range(3000)]
    counts = collections.Counter(sequence)
    assert set(counts) == names, counts
    mean = 3000 / len(names)
    for name, count in counts.items():
        assert abs(count - mean) <= 0.02 * mean, (name, counts)
    in_turn = sum(len(set(sequence[i:i + 3])) == 3 for i in range(len(sequence) - 2))
    assert in_turn >= 0.99 * (len(sequence) - 2), (in_turn, sequence[:30])


def test_pick_first_sends_everything_to_one_replica(replicas):
    group = replicas(3)
    with myops_client.Client(ipv4_target(group), load_balancing="pick_first") as client:
        counts = collections.Counter(served_by(client) for _ in range(300))
    assert len(counts) == 1, counts


def test_killing_a_replica_under_load_loses_no_request(replicas):
    group = replicas(3)
    victim = group[1]
    served: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    stop = threading.Event()
    # Retries go to the next ready replica; the backoff lets the channel see the loss.
    client = myops_client.Client(ipv4_target(group), retries=5, retry_backoff=0.02,
                                 max_retry_backoff=0.2)

    def work():
        while not stop.is_set():
            try:
                name = served_by(client)
            except BaseException as error:  # noqa: B902 - recorded, asserted below
                with lock:
                    errors.append(error)
                return
            with lock:
                served.append(name)

    def count():
        with lock:
            return len(served)

    threads = [threading.Thread(target=work) for _ in range(4)]
    try:
        for t in threads:
            t.start()
        assert poll(lambda: count() >= 600 or bool(errors)), "no progress"
        before = count()
        victim.kill()  # SIGKILL: its calls in flight fail with UNAVAILABLE
        assert poll(lambda: count() >= before + 600 or bool(errors)), "no progress after the kill"
    finally:
        stop.set()
        for t in threads:
            t.join()
        client.close()
    assert not errors, errors[:3]
    assert victim.name in served[:before]
    after = collections.Counter(served[before:])
    assert set(after) >= {group[0].name, group[2].name}, after


def test_a_draining_replica_gets_no_new_requests_once_its_health_flips(replicas):
    # A long drain delay: the draining replica keeps serving whoever still calls it.
    group = replicas(3, "--drain-delay", "60")
    draining = group[0]
    names = {r.name for r in group}
    probe = myops_client.Client(draining.address, retries=0)
    with myops_client.Client(ipv4_target(group), health_checking=True) as client:
        assert connected_to_all(client, names)
        draining.send_signal(signal.SIGTERM)  # health flips; the drain delay runs
        assert poll(lambda: probe.health() is False), "health never flipped"
        # The channel watches each replica's health: once it has seen the flip, nothing
        # more goes to the draining replica.
        streak = [0]

        def away() -> bool:
            streak[0] = streak[0] + 1 if served_by(client) != draining.name else 0
            return streak[0] >= 30
        assert poll(away, timeout=60, interval=0)
        counts = collections.Counter(served_by(client) for _ in range(600))
    assert draining.name not in counts, counts
    assert set(counts) == names - {draining.name}, counts
    # It is still up and serving: only its health kept the balancing client away, as a
    # client without health checking shows.
    assert served_by(probe) == draining.name
    with myops_client.Client(ipv4_target(group)) as unchecked:
        counts = collections.Counter(served_by(unchecked) for _ in range(300))
    assert counts[draining.name] > 0, counts
    probe.close()


def test_a_new_replica_gets_traffic_after_the_connection_age(replicas):
    # Replicas on 127.0.0.1, .2, .3 share one port; a DNS name lists them (TTL 0), as a
    # headless Service lists its pods' IPs.
    port = free_port()
    flags = ("--max-connection-age", "0.5", "--max-connection-age-grace", "5")
    started = [Replica(f"r{i}", *flags, host=f"127.0.0.{i + 1}", port=port) for i in range(2)]
    dns = DnsServer(["127.0.0.1", "127.0.0.2"])
    try:
        # The resolver may re-resolve every 100 ms (gRPC's default: at most every 30 s).
        with myops_client.Client(
                dns.target("myops.test", port),
                channel_args={"grpc.dns_min_time_between_resolutions_ms": 100}) as client:
            assert connected_to_all(client, {"r0", "r1"})
            started.append(Replica("r2", *flags, host="127.0.0.3", port=port))
            dns.set_addresses(["127.0.0.1", "127.0.0.2", "127.0.0.3"])
            # The old connections reach their age, get a GOAWAY, and the channel
            # re-resolves the name: the new replica appears among the addresses.
            assert connected_to_all(client, {"r0", "r1", "r2"})
            counts = collections.Counter(served_by(client) for _ in range(300))
        assert set(counts) == {"r0", "r1", "r2"}, counts
        assert dns.queries >= 2
    finally:
        dns.close()
        for r in started:
            r.close()
