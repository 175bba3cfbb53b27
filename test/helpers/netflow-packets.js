'use strict'

// Handcrafted NetFlow v5, v9 and IPFIX datagrams, written from the layouts
// of Cisco's v5 format, RFC 3954 and RFC 7011 (not from our decoder), for
// the codec's unit tests, fuzzing and the synthesized benchmark corpus.

/** Big-endian bytes of an unsigned integer (number or BigInt) in `size` bytes. */
function uint (value, size) {
  const out = Buffer.alloc(size)
  let v = BigInt(value)
  for (let i = size - 1; i >= 0; i--) { out[i] = Number(v & 0xffn); v >>= 8n }
  return out
}

const ipv4 = (text) => Buffer.from(text.split('.').map(Number))

/** 16 bytes of an IPv6 address in any text form with at most one "::". */
function ipv6 (text) {
  const [head, tail] = text.split('::')
  const left = head ? head.split(':') : []
  const right = tail === undefined ? [] : tail ? tail.split(':') : []
  const groups = [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
  return Buffer.concat(groups.map((g) => uint(parseInt(g, 16), 2)))
}

/** An IPFIX variable-length value: 1-byte length under 255, else 255 and a 2-byte length (RFC 7011 §7). */
function varlen (bytes, { long = false } = {}) {
  const head = bytes.length < 255 && !long ? uint(bytes.length, 1) : Buffer.concat([uint(255, 1), uint(bytes.length, 2)])
  return Buffer.concat([head, bytes])
}

const V5_DEFAULTS = { srcAddr: '10.0.0.1', dstAddr: '10.0.0.2', nextHop: '0.0.0.0', inputIf: 0, outputIf: 0, packets: 1, bytes: 64, first: 0, last: 0, srcPort: 0, dstPort: 0, tcpFlags: 0, proto: 17, tos: 0, srcAs: 0, dstAs: 0 }

/** A v5 datagram: the 24-byte header and 48-byte records (count defaults to the records'). */
function v5Packet ({ sysUptime = 0, secs = 0, nsecs = 0, sequence = 0, engineType = 0, engineId = 0, sampling = 0, count, records = [] } = {}) {
  const header = Buffer.concat([uint(5, 2), uint(count ?? records.length, 2), uint(sysUptime, 4), uint(secs, 4), uint(nsecs, 4), uint(sequence, 4), uint(engineType, 1), uint(engineId, 1), uint(sampling, 2)])
  const body = records.map((given) => {
    const r = { ...V5_DEFAULTS, ...given }
    return Buffer.concat([ipv4(r.srcAddr), ipv4(r.dstAddr), ipv4(r.nextHop), uint(r.inputIf, 2), uint(r.outputIf, 2), uint(r.packets, 4), uint(r.bytes, 4),
      uint(r.first, 4), uint(r.last, 4), uint(r.srcPort, 2), uint(r.dstPort, 2), uint(0, 1), uint(r.tcpFlags, 1), uint(r.proto, 1), uint(r.tos, 1),
      uint(r.srcAs, 2), uint(r.dstAs, 2), uint(0, 1), uint(0, 1), uint(0, 2)])
  })
  return Buffer.concat([header, ...body])
}

/** A v9 datagram: the 20-byte header and the given flowsets. */
function v9Packet ({ count = 0, sysUptime = 0, secs = 0, sequence = 0, sourceId = 0, sets = [] } = {}) {
  return Buffer.concat([uint(9, 2), uint(count, 2), uint(sysUptime, 4), uint(secs, 4), uint(sequence, 4), uint(sourceId, 4), ...sets])
}

/** An IPFIX message: the 16-byte header (length computed unless given) and the sets. */
function ipfixMessage ({ exportTime = 0, sequence = 0, domain = 0, length, sets = [] } = {}) {
  const body = Buffer.concat(sets)
  return Buffer.concat([uint(10, 2), uint(length ?? 16 + body.length, 2), uint(exportTime, 4), uint(sequence, 4), uint(domain, 4), body])
}

/** A set: ID, length (computed unless given) and body, plus `padding` zero bytes counted in the length. */
function set (id, body, { padding = 0, length } = {}) {
  const content = Buffer.concat([body, Buffer.alloc(padding)])
  return Buffer.concat([uint(id, 2), uint(length ?? 4 + content.length, 2), content])
}

/**
 * Template records for a set of ID `setId`: each `{ id, fields: [[element,
 * length, enterprise?]], scope? }`; `{ id, withdraw: true }` is an IPFIX
 * withdrawal (field count 0). Set 1 (v9 options) writes RFC 3954's scope
 * and option lengths in bytes; set 3 (IPFIX options) the scope field count.
 */
function templateRecords (setId, templates) {
  return Buffer.concat(templates.map((t) => {
    if (t.withdraw) return Buffer.concat([uint(t.id, 2), uint(0, 2)])
    const specifiers = t.fields.map(([element, length, enterprise]) => enterprise
      ? Buffer.concat([uint(element | 0x8000, 2), uint(length, 2), uint(enterprise, 4)])
      : Buffer.concat([uint(element, 2), uint(length, 2)]))
    if (setId === 1) return Buffer.concat([uint(t.id, 2), uint(t.scope * 4, 2), uint((t.fields.length - t.scope) * 4, 2), ...specifiers])
    if (setId === 3) return Buffer.concat([uint(t.id, 2), uint(t.fields.length, 2), uint(t.scope, 2), ...specifiers])
    return Buffer.concat([uint(t.id, 2), uint(t.fields.length, 2), ...specifiers])
  }))
}

/** A template (or options template) set; see templateRecords. */
function templateSet (setId, templates, options) {
  return set(setId, templateRecords(setId, templates), options)
}

module.exports = { uint, ipv4, ipv6, varlen, v5Packet, v9Packet, ipfixMessage, set, templateSet, templateRecords }
