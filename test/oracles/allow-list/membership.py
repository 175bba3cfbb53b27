#!/usr/bin/env python3
"""Independent oracle for lib/shared/allow-list.js: Python's ipaddress module.

Reads one JSON object from stdin: {"seed": int, "lists": int, "addresses": int}.
Draws `lists` random allow-lists (IPv4, IPv6 and IPv4-mapped entries, /0 to
/32 and /128, host bits set) and, per list, `addresses` source addresses
(inside entries, on their first and last address and one past them, and
anywhere), each in several text forms. Writes
[{"entries": [...], "addresses": [...], "allowed": [...]}] to stdout.

The rule computed: an IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4
address a.b.c.d, as a source and as an entry (mapped entries are /96 or
longer); otherwise a source is allowed when an entry of its own version
contains it.
"""
import ipaddress
import json
import random
import sys

V4_PREFIXES = [0, 1, 7, 8, 12, 16, 23, 24, 25, 30, 31, 32]
V6_PREFIXES = [0, 1, 8, 16, 31, 32, 48, 63, 64, 65, 96, 112, 127, 128]


def random_v4(rng):
    return ipaddress.IPv4Address(rng.getrandbits(32))


def random_v6(rng):
    value = rng.getrandbits(128)
    if rng.random() < 0.3:  # runs of zero groups, so that texts have '::'
        value &= ~(((1 << (16 * rng.randint(1, 6))) - 1) << (16 * rng.randint(0, 2)))
        value &= (1 << 128) - 1
    return ipaddress.IPv6Address(value)


def random_entry(rng):
    kind = rng.random()
    if kind < 0.45:
        address, prefix = random_v4(rng), rng.choice(V4_PREFIXES + [rng.randint(0, 32)])
        return str(address) if prefix == 32 and rng.random() < 0.5 else f"{address}/{prefix}"
    if kind < 0.9:
        address, prefix = random_v6(rng), rng.choice(V6_PREFIXES + [rng.randint(0, 128)])
        return str(address) if prefix == 128 and rng.random() < 0.5 else f"{address}/{prefix}"
    address, prefix = random_v4(rng), rng.randint(0, 32)
    return f"::ffff:{address}/{96 + prefix}"


def network_of(entry):
    network = ipaddress.ip_network(entry, strict=False)
    if network.version == 6 and network.prefixlen >= 96 and network.network_address.ipv4_mapped is not None:
        return ipaddress.IPv4Network((network.network_address.ipv4_mapped, network.prefixlen - 96))
    return network


def source_of(text):
    address = ipaddress.ip_address(text)
    if address.version == 6 and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def candidates(rng, networks):
    """Addresses worth asking about: inside, at and just past each network's ends, and anywhere."""
    out = []
    for network in networks:
        first, last = int(network.network_address), int(network.broadcast_address)
        top = (1 << network.max_prefixlen) - 1
        for value in (first, last, first - 1, last + 1, rng.randint(first, last)):
            if 0 <= value <= top:
                out.append(ipaddress.ip_address(value) if network.version == 6 else ipaddress.IPv4Address(value))
    out += [random_v4(rng) for _ in range(4)] + [random_v6(rng) for _ in range(4)]
    out.append(ipaddress.IPv6Address(0xffff << 32 | rng.getrandbits(32)))  # mapped, as hex
    return out


def texts_of(rng, address):
    """The forms a sender's address may take: compressed, exploded, upper case, IPv4-mapped."""
    if address.version == 4:
        return [str(address), f"::ffff:{address}"] if rng.random() < 0.4 else [str(address)]
    forms = [address.compressed, address.exploded]
    if rng.random() < 0.2:
        forms.append(address.compressed.upper())
    return forms


def main():
    request = json.load(sys.stdin)
    rng = random.Random(request["seed"])
    cases = []
    for _ in range(request["lists"]):
        entries = [random_entry(rng) for _ in range(rng.randint(1, 25))]
        networks = [network_of(entry) for entry in entries]
        pool = candidates(rng, networks)
        addresses = []
        for address in rng.sample(pool, min(len(pool), request["addresses"])):
            addresses += texts_of(rng, address)
        allowed = []
        for text in addresses:
            source = source_of(text)
            allowed.append(any(source.version == n.version and source in n for n in networks))
        cases.append({"entries": entries, "addresses": addresses, "allowed": allowed})
    json.dump(cases, sys.stdout)


if __name__ == "__main__":
    main()
