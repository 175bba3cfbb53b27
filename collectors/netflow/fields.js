'use strict'

// The information elements the codec reads (RFC 7012 and the IANA IPFIX
// registry; NetFlow v9's field types share these numbers, RFC 3954 §8),
// each with its name, its abstract type and, for the ones a flow record
// holds, its key in the flow record (shapes.js). Every other element, and
// every other enterprise-specific one, is read past by its length and
// counted (unknownFields): the registry has hundreds, and a flow store that
// kept them raw would grow with whatever an exporter chose to send.
//
// Types: unsigned (any length 1–8, RFC 7011 §6.2 reduced-size encoding),
// ipv4 (4 bytes), ipv6 (16), string (UTF-8, any length), seconds
// (dateTimeSeconds, 4), milliseconds (dateTimeMilliseconds, 8), ntp
// (dateTimeMicro/Nanoseconds: NTP seconds and fraction, 8), deltaMicroseconds
// (µs before the export time, 4), uptime (ms of the exporter's sysUpTime, 4),
// systemInit (systemInitTimeMilliseconds: the epoch ms sysUpTime counts from, 8).

/** [element ID, name, type, flow record key or undefined] */
const INFORMATION_ELEMENTS = Object.freeze([
  [1, 'octetDeltaCount', 'unsigned', 'bytes'],
  [2, 'packetDeltaCount', 'unsigned', 'packets'],
  [85, 'octetTotalCount', 'unsigned', 'bytes'],
  [86, 'packetTotalCount', 'unsigned', 'packets'],
  [4, 'protocolIdentifier', 'unsigned', 'proto'],
  [5, 'ipClassOfService', 'unsigned', 'tos'],
  [6, 'tcpControlBits', 'unsigned', 'tcpFlags'],
  [7, 'sourceTransportPort', 'unsigned', 'srcPort'],
  [8, 'sourceIPv4Address', 'ipv4', 'srcAddr'],
  [10, 'ingressInterface', 'unsigned', 'inputIf'],
  [11, 'destinationTransportPort', 'unsigned', 'dstPort'],
  [12, 'destinationIPv4Address', 'ipv4', 'dstAddr'],
  [14, 'egressInterface', 'unsigned', 'outputIf'],
  [15, 'ipNextHopIPv4Address', 'ipv4', 'nextHop'],
  [16, 'bgpSourceAsNumber', 'unsigned', 'srcAs'],
  [17, 'bgpDestinationAsNumber', 'unsigned', 'dstAs'],
  [21, 'flowEndSysUpTime', 'uptime', 'last'],
  [22, 'flowStartSysUpTime', 'uptime', 'first'],
  [27, 'sourceIPv6Address', 'ipv6', 'srcAddr'],
  [28, 'destinationIPv6Address', 'ipv6', 'dstAddr'],
  [62, 'ipNextHopIPv6Address', 'ipv6', 'nextHop'],
  [150, 'flowStartSeconds', 'seconds', 'first'],
  [151, 'flowEndSeconds', 'seconds', 'last'],
  [152, 'flowStartMilliseconds', 'milliseconds', 'first'],
  [153, 'flowEndMilliseconds', 'milliseconds', 'last'],
  [154, 'flowStartMicroseconds', 'ntp', 'first'],
  [155, 'flowEndMicroseconds', 'ntp', 'last'],
  [156, 'flowStartNanoseconds', 'ntp', 'first'],
  [157, 'flowEndNanoseconds', 'ntp', 'last'],
  [158, 'flowStartDeltaMicroseconds', 'deltaMicroseconds', 'first'],
  [159, 'flowEndDeltaMicroseconds', 'deltaMicroseconds', 'last'],
  [160, 'systemInitTimeMilliseconds', 'systemInit', undefined],
  // The sampling a data record says it was taken with (1 in N packets);
  // in options records, what the exporter says of its sampler.
  [34, 'samplingInterval', 'unsigned', 'samplingInterval'],
  [50, 'samplerRandomInterval', 'unsigned', 'samplingInterval'],
  // Read into options records (sampling, interfaces, the exporter).
  [35, 'samplingAlgorithm', 'unsigned', undefined],
  [82, 'interfaceName', 'string', undefined],
  [83, 'interfaceDescription', 'string', undefined],
  [130, 'exporterIPv4Address', 'ipv4', undefined],
  [131, 'exporterIPv6Address', 'ipv6', undefined],
  [143, 'meteringProcessId', 'unsigned', undefined],
  [144, 'exportingProcessId', 'unsigned', undefined],
  [149, 'observationDomainId', 'unsigned', undefined],
  [302, 'selectorId', 'unsigned', undefined],
  [304, 'selectorAlgorithm', 'unsigned', undefined],
  [305, 'samplingPacketInterval', 'unsigned', undefined],
  [306, 'samplingPacketSpace', 'unsigned', undefined]
])

/**
 * RFC 5103 biflows: an element under this enterprise number is the same
 * element ID of the reverse direction (what the destination sent back).
 */
const REVERSE_PEN = 29305

/** [element ID, name, type, flow record key]: the reverse elements the codec reads (RFC 5103 §6.1). */
const REVERSE_ELEMENTS = Object.freeze([
  [1, 'reverseOctetDeltaCount', 'unsigned', 'reverseBytes'],
  [2, 'reversePacketDeltaCount', 'unsigned', 'reversePackets'],
  [6, 'reverseTcpControlBits', 'unsigned', 'reverseTcpFlags'],
  [85, 'reverseOctetTotalCount', 'unsigned', 'reverseBytes'],
  [86, 'reversePacketTotalCount', 'unsigned', 'reversePackets']
])

const table = (elements) => new Map(elements.map(([id, name, type, key]) => [id, Object.freeze({ name, type, key })]))
/** The element table by ID: { name, type, key }. */
const BY_ID = table(INFORMATION_ELEMENTS)
/** The reverse elements (enterprise REVERSE_PEN) by ID. */
const REVERSE_BY_ID = table(REVERSE_ELEMENTS)

/** NetFlow v9 options scope field types (RFC 3954 §6.1): their own numbers, not elements. */
const V9_SCOPES = Object.freeze({ 1: 'scopeSystem', 2: 'scopeInterface', 3: 'scopeLineCard', 4: 'scopeCache', 5: 'scopeTemplate' })

/** The fixed size a type needs, or 0 when any size 1–8 (unsigned) or any at all (string) does. */
const TYPE_SIZES = Object.freeze({ unsigned: 0, string: 0, ipv4: 4, ipv6: 16, seconds: 4, milliseconds: 8, ntp: 8, deltaMicroseconds: 4, uptime: 4, systemInit: 8 })

module.exports = { INFORMATION_ELEMENTS, BY_ID, REVERSE_ELEMENTS, REVERSE_BY_ID, REVERSE_PEN, V9_SCOPES, TYPE_SIZES }
