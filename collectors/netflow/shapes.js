'use strict'

// The two shapes the codec hands on: a flow record and a decoded datagram.

/**
 * On a flow record whose template has fields the codec reads past: their
 * names (`ie<ID>`, `<enterprise>.<ID>`, or a known element's name at a
 * length it does not read), one per field, shared by the template's
 * records. A symbol: it is what the collector counts, never stored.
 */
const READ_PAST = Symbol('readPast')

/**
 * One flow as the codec hands it on, whatever the version: addresses as
 * text (IPv6 in RFC 5952 form), counters as finite non-negative integers,
 * `first`/`last` in ms since the epoch. A field the exporter's template
 * does not carry is 0, or undefined for addresses, next hop and times (an
 * IPFIX time relative to a system init time not yet received is undefined
 * too: never a guess). Counts are as exported, not scaled by sampling:
 * `samplingInterval` says the 1-in-N the record (v9/IPFIX elements 34,
 * 50) or the v5 header gives, 0 when the datagram says none.
 *
 * An RFC 5103 biflow (IPFIX, enterprise 29305 elements) has its reverse
 * direction, what the destination sent back, in the reverse fields: 0 for
 * a one-way flow.
 *
 * @typedef {object} NetflowRecord
 * @property {string|undefined} srcAddr
 * @property {string|undefined} dstAddr
 * @property {number} srcPort
 * @property {number} dstPort
 * @property {number} proto IP protocol number
 * @property {number} packets
 * @property {number} bytes
 * @property {number|undefined} first ms since the epoch, the flow's first packet
 * @property {number|undefined} last ms since the epoch, its last packet
 * @property {number} tcpFlags OR of the TCP flags seen
 * @property {number} tos type of service / traffic class
 * @property {number} inputIf
 * @property {number} outputIf
 * @property {number} srcAs
 * @property {number} dstAs
 * @property {string|undefined} nextHop
 * @property {number} reverseBytes biflow: bytes from dstAddr to srcAddr
 * @property {number} reversePackets biflow: packets from dstAddr to srcAddr
 * @property {number} reverseTcpFlags biflow: OR of the reverse direction's TCP flags
 * @property {number} samplingInterval 1 in how many packets were sampled (0: not said)
 */

/**
 * A record with every field at its absent value, always built in this
 * order so every record shares one shape. The one declaration of the
 * record's fields: fields.js maps information elements onto these keys.
 * @returns {NetflowRecord}
 */
function newFlow () {
  return {
    srcAddr: undefined,
    dstAddr: undefined,
    srcPort: 0,
    dstPort: 0,
    proto: 0,
    packets: 0,
    bytes: 0,
    first: undefined,
    last: undefined,
    tcpFlags: 0,
    tos: 0,
    inputIf: 0,
    outputIf: 0,
    srcAs: 0,
    dstAs: 0,
    nextHop: undefined,
    reverseBytes: 0,
    reversePackets: 0,
    reverseTcpFlags: 0,
    samplingInterval: 0
  }
}

/**
 * What decodeNetflow returns for an accepted datagram, the same shape for
 * every version (v5 has no templates or options: those counts stay 0).
 *
 * @typedef {object} NetflowDatagram
 * @property {5|9|10} version
 * @property {number} domain v9 source ID, IPFIX observation domain ID, v5 engine type << 8 | engine ID
 * @property {number} sequence as exported: v5 counts flows, v9 export packets, IPFIX data records
 * @property {number|undefined} nextSequence the sequence the domain's next datagram should carry (mod 2^32); undefined when unknowable (an IPFIX data set of an unknown template)
 * @property {number} exportTime ms since the epoch (v9 and IPFIX headers carry seconds)
 * @property {number|undefined} sysUptime v5 and v9: the exporter's uptime at export, ms mod 2^32 (IPFIX has none)
 * @property {number} samplingInterval v5 header's (0 when none; each record has it too); for v9/IPFIX see the records and the options records
 * @property {NetflowRecord[]} records flows
 * @property {Array<{ templateId: number, scope: string[], values: object }>} options options data records, by element name (`scope`: the names of its scope fields, the first of `values`)
 * @property {number} templatesLearned templates new or changed in the store
 * @property {number} templatesWithdrawn templates removed by IPFIX withdrawals
 * @property {number} unknownTemplates data sets skipped for want of their template
 * @property {number} unknownFields field values read past in flow records (elements a record does not hold; each record names its own under READ_PAST)
 */

/** @returns {NetflowDatagram} */
function newDatagram (version, domain, sequence, exportTime) {
  return {
    version,
    domain,
    sequence,
    nextSequence: undefined,
    exportTime,
    sysUptime: undefined,
    samplingInterval: 0,
    records: [],
    options: [],
    templatesLearned: 0,
    templatesWithdrawn: 0,
    unknownTemplates: 0,
    unknownFields: 0
  }
}

module.exports = { newFlow, newDatagram, READ_PAST }
