'use strict'

// Data records of NetFlow v9 and IPFIX, read by their template. A template
// is compiled once into a plan (an operation and a length per field) and
// the plan is kept beside the template value it came from (a WeakMap), so
// the hot loop is a switch per field with no lookups. Records are read
// while the set has room for the template's shortest record; fewer bytes
// than that are padding (RFC 7011 §3.3.1, RFC 3954 §5.3).

const { BY_ID, REVERSE_BY_ID, REVERSE_PEN, V9_SCOPES, TYPE_SIZES } = require('./fields')
const { newFlow, READ_PAST } = require('./shapes')
const { ipv6Text } = require('../../lib/shared/ipv6-text')
const { MAX_TEMPLATE_FIELDS, VARIABLE_LENGTH } = require('./template-set')

// What a field of a flow record does: read past it (SKIP), or read it into
// one key of the record. OPS names each operation by the record key and
// the element's type in fields.js; a unit test checks every pair there has one.
const SKIP = 0
const SRC_ADDR4 = 1
const DST_ADDR4 = 2
const SRC_ADDR6 = 3
const DST_ADDR6 = 4
const NEXT_HOP4 = 5
const NEXT_HOP6 = 6
const FIRST_NTP = 7
const LAST_NTP = 8
// From here on the field is an unsigned integer first.
const SRC_PORT = 9
const DST_PORT = 10
const PROTO = 11
const PACKETS = 12
const BYTES = 13
const TCP_FLAGS = 14
const TOS = 15
const INPUT_IF = 16
const OUTPUT_IF = 17
const SRC_AS = 18
const DST_AS = 19
const FIRST_UPTIME = 20
const LAST_UPTIME = 21
const FIRST_SECONDS = 22
const LAST_SECONDS = 23
const FIRST_MS = 24
const LAST_MS = 25
const FIRST_DELTA_US = 26
const LAST_DELTA_US = 27
const SYSTEM_INIT = 28
const REVERSE_BYTES = 29
const REVERSE_PACKETS = 30
const REVERSE_TCP_FLAGS = 31
const SAMPLING_INTERVAL = 32

const OPS = Object.freeze({
  'srcAddr:ipv4': SRC_ADDR4,
  'dstAddr:ipv4': DST_ADDR4,
  'srcAddr:ipv6': SRC_ADDR6,
  'dstAddr:ipv6': DST_ADDR6,
  'nextHop:ipv4': NEXT_HOP4,
  'nextHop:ipv6': NEXT_HOP6,
  'first:ntp': FIRST_NTP,
  'last:ntp': LAST_NTP,
  'srcPort:unsigned': SRC_PORT,
  'dstPort:unsigned': DST_PORT,
  'proto:unsigned': PROTO,
  'packets:unsigned': PACKETS,
  'bytes:unsigned': BYTES,
  'tcpFlags:unsigned': TCP_FLAGS,
  'tos:unsigned': TOS,
  'inputIf:unsigned': INPUT_IF,
  'outputIf:unsigned': OUTPUT_IF,
  'srcAs:unsigned': SRC_AS,
  'dstAs:unsigned': DST_AS,
  'first:uptime': FIRST_UPTIME,
  'last:uptime': LAST_UPTIME,
  'first:seconds': FIRST_SECONDS,
  'last:seconds': LAST_SECONDS,
  'first:milliseconds': FIRST_MS,
  'last:milliseconds': LAST_MS,
  'first:deltaMicroseconds': FIRST_DELTA_US,
  'last:deltaMicroseconds': LAST_DELTA_US,
  'systemInit:systemInit': SYSTEM_INIT,
  'reverseBytes:unsigned': REVERSE_BYTES,
  'reversePackets:unsigned': REVERSE_PACKETS,
  'reverseTcpFlags:unsigned': REVERSE_TCP_FLAGS,
  'samplingInterval:unsigned': SAMPLING_INTERVAL
})

const TRUNCATED = -1
const TOO_LARGE = -2
const TWO_32 = 4294967296
const NTP_TO_UNIX = 2208988800 // seconds from 1900 to 1970
const plans = new WeakMap()

/**
 * The plan of a stored template value, or undefined when the value is not
 * a template this version can read (a store may hand back anything).
 * @param {{ fields: Array<[number, number, number]>, scope: number }} template
 * @param {boolean} ipfix
 */
function planOf (template, ipfix) {
  let plan = plans.get(template)
  if (plan === undefined || plan.ipfix !== ipfix) {
    plan = compile(template, ipfix)
    if (plan) plans.set(template, plan)
  }
  return plan
}

function compile (template, ipfix) {
  const { fields, scope } = template || {}
  if (!Array.isArray(fields) || fields.length === 0 || fields.length > MAX_TEMPLATE_FIELDS || !Number.isInteger(scope) || scope < 0 || scope > fields.length) return undefined
  const ops = new Uint8Array(fields.length)
  const lengths = new Uint16Array(fields.length)
  const infos = []
  let minLength = 0
  const skipped = [] // the names of the fields read past, one per field
  for (let i = 0; i < fields.length; i++) {
    const [id, length, enterprise] = Array.isArray(fields[i]) ? fields[i] : []
    if (!isUint(id, 0xffff) || !isUint(length, 0xffff) || !isUint(enterprise, 0xffffffff)) return undefined
    if (length === VARIABLE_LENGTH && !ipfix) return undefined
    const info = enterprise === 0 ? BY_ID.get(id) : enterprise === REVERSE_PEN ? REVERSE_BY_ID.get(id) : undefined
    infos.push(!ipfix && i < scope ? { name: V9_SCOPES[id] || `scope${id}`, type: 'unsigned' } : info || { name: enterprise ? `${enterprise}.${id}` : `ie${id}`, type: 'bytes' })
    ops[i] = opOf(info, length)
    if (ops[i] === SKIP) skipped.push(infos[i].name)
    lengths[i] = length
    minLength += length === VARIABLE_LENGTH ? 1 : length
  }
  if (minLength === 0) return undefined
  return { ipfix, options: scope > 0, scopeNames: Object.freeze(infos.slice(0, scope).map((info) => info.name)), ops, lengths, infos, minLength, skipped: skipped.length, skippedNames: Object.freeze(skipped) }
}

const isUint = (n, max) => Number.isInteger(n) && n >= 0 && n <= max

function opOf (info, length) {
  if (!info || length === VARIABLE_LENGTH) return SKIP
  const size = TYPE_SIZES[info.type]
  if (size ? length !== size : info.type !== 'unsigned' || length < 1 || length > 8) return SKIP
  const key = info.type === 'systemInit' ? 'systemInit' : info.key
  return OPS[`${key}:${info.type}`] || SKIP
}

/**
 * Reads the records of one data set into `datagram` (flows into records,
 * options records into options, a systemInitTimeMilliseconds into the
 * domain through `context.setSystemInit`).
 * @param {Buffer} buf
 * @param {number} start first byte after the set header
 * @param {number} end the set's end
 * @param {object} plan from planOf
 * @param {{ exportTime: number, sysUptime?: number, systemInit?: number, setSystemInit: Function, templateId: number, uptimes: object, maxRecords: number }} context
 * @param {import('./shapes').NetflowDatagram} datagram
 * @returns {number|string} how many records were read, or the reason of a refusal
 */
function readDataSet (buf, start, end, plan, context, datagram) {
  let at = start
  let count = 0
  while (end - at >= plan.minLength) {
    if (plan.options) {
      const values = {}
      at = readOptionsRecord(buf, at, end, plan, values)
      if (at < 0) break
      datagram.options.push({ templateId: context.templateId, scope: plan.scopeNames, values })
      if (typeof values.systemInitTimeMilliseconds === 'number') context.setSystemInit(values.systemInitTimeMilliseconds)
    } else {
      const flow = newFlow()
      at = readFlow(buf, at, end, plan, context, flow)
      if (at < 0) break
      if (plan.skipped > 0) {
        flow[READ_PAST] = plan.skippedNames
        datagram.unknownFields += plan.skipped
      }
      datagram.records.push(flow)
    }
    count++
    if (datagram.records.length + datagram.options.length > context.maxRecords) return 'netflow-too-many-records'
  }
  if (at === TRUNCATED) return 'netflow-truncated'
  if (at === TOO_LARGE) return 'netflow-counter-too-large'
  if (!isPadding(buf, at, end)) return 'netflow-truncated'
  return count
}

// What is left of a set after its last whole record is padding (RFC 7011
// §3.3.1: zeros, shorter than a record; RFC 3954: to a 4-byte boundary).
// Four bytes or more holding anything but zeros are a record cut short: a
// set of 40 bytes for a template of 48-byte records (data the exporter sent
// with a layout it changed) was taken for padding, its datagram accepted
// with no flow and nothing counted.
function isPadding (buf, at, end) {
  if (end - at < 4) return true
  for (let i = at; i < end; i++) if (buf[i] !== 0) return false
  return true
}

// One flow record from `at`; returns where the next one starts, or TRUNCATED / TOO_LARGE.
function readFlow (buf, at, end, plan, context, flow) {
  const { ops, lengths } = plan
  const uptimes = context.uptimes
  uptimes.first = uptimes.last = uptimes.init = -1
  for (let i = 0; i < ops.length; i++) {
    let length = lengths[i]
    if (length === VARIABLE_LENGTH) {
      length = variableLength(buf, at, end)
      if (length < 0) return TRUNCATED
      at += buf[at] === 255 ? 3 : 1
    }
    if (end - at < length) return TRUNCATED
    const op = ops[i]
    if (op >= SRC_PORT) {
      const value = readUnsigned(buf, at, length)
      if (value < 0) return TOO_LARGE
      setNumber(flow, op, value, context)
    } else if (op !== SKIP) {
      setText(flow, op, buf, at)
    }
    at += length
  }
  if (uptimes.first >= 0 || uptimes.last >= 0) uptimesToTimes(flow, plan.ipfix, context)
  if (!isDateTime(flow.first) || !isDateTime(flow.last)) return TOO_LARGE
  return at
}

// A time a Date holds (±8.64e15 ms, about 275,000 years): a flowEndMilliseconds
// under 2^53 but past it made an Invalid Date, which failed the whole
// datagram's writes instead of refusing it by name.
const MAX_DATE_MS = 8.64e15
function isDateTime (ms) {
  return ms === undefined || (ms >= -MAX_DATE_MS && ms <= MAX_DATE_MS)
}

// The length of a variable-length field whose prefix is at `at` (RFC 7011
// §7: one byte under 255, else 255 and two bytes), or -1 past `end`.
function variableLength (buf, at, end) {
  if (at >= end) return -1
  if (buf[at] < 255) return buf[at]
  return end - at < 3 ? -1 : buf.readUInt16BE(at + 1)
}

function setNumber (flow, op, value, context) {
  switch (op) {
    case SRC_PORT: flow.srcPort = value; break
    case DST_PORT: flow.dstPort = value; break
    case PROTO: flow.proto = value; break
    case PACKETS: flow.packets = value; break
    case BYTES: flow.bytes = value; break
    case TCP_FLAGS: flow.tcpFlags = value; break
    case TOS: flow.tos = value; break
    case INPUT_IF: flow.inputIf = value; break
    case OUTPUT_IF: flow.outputIf = value; break
    case SRC_AS: flow.srcAs = value; break
    case DST_AS: flow.dstAs = value; break
    case FIRST_UPTIME: context.uptimes.first = value; break
    case LAST_UPTIME: context.uptimes.last = value; break
    case FIRST_SECONDS: flow.first = value * 1000; break
    case LAST_SECONDS: flow.last = value * 1000; break
    case FIRST_MS: flow.first = value; break
    case LAST_MS: flow.last = value; break
    case FIRST_DELTA_US: flow.first = context.exportTime - Math.ceil(value / 1000); break
    case LAST_DELTA_US: flow.last = context.exportTime - Math.ceil(value / 1000); break
    case SYSTEM_INIT: context.uptimes.init = value; break
    case REVERSE_BYTES: flow.reverseBytes = value; break
    case REVERSE_PACKETS: flow.reversePackets = value; break
    case REVERSE_TCP_FLAGS: flow.reverseTcpFlags = value; break
    case SAMPLING_INTERVAL: flow.samplingInterval = value; break
  }
}

function setText (flow, op, buf, at) {
  switch (op) {
    case SRC_ADDR4: flow.srcAddr = ipv4Text(buf, at); break
    case DST_ADDR4: flow.dstAddr = ipv4Text(buf, at); break
    case SRC_ADDR6: flow.srcAddr = ipv6Text(buf, at); break
    case DST_ADDR6: flow.dstAddr = ipv6Text(buf, at); break
    case NEXT_HOP4: flow.nextHop = ipv4Text(buf, at); break
    case NEXT_HOP6: flow.nextHop = ipv6Text(buf, at); break
    case FIRST_NTP: flow.first = ntpMilliseconds(buf, at); break
    case LAST_NTP: flow.last = ntpMilliseconds(buf, at); break
  }
}

// sysUpTime values to epoch ms. v9: the header's sysUptime is the uptime at
// export. IPFIX: the uptime at export is the export time less the system
// init time (the record's own, else the domain's from an options record;
// none known, no time). Either way a flow's time is the export time less a
// signed 32-bit difference of uptimes, which holds across the wrap of the
// 32-bit uptime (every 49.7 days).
function uptimesToTimes (flow, ipfix, context) {
  const { first, last, init } = context.uptimes
  let uptimeAtExport = context.sysUptime
  if (ipfix) {
    const systemInit = init >= 0 ? init : context.systemInit
    if (systemInit === undefined) return
    uptimeAtExport = context.exportTime - systemInit
  }
  if (first >= 0) flow.first = context.exportTime - ((uptimeAtExport - first) | 0)
  if (last >= 0) flow.last = context.exportTime - ((uptimeAtExport - last) | 0)
}

/** An unsigned integer of 1–8 bytes, or -1 when it is 2^53 or more (a double would round it). */
function readUnsigned (buf, at, length) {
  switch (length) {
    case 1: return buf[at]
    case 2: return (buf[at] << 8) | buf[at + 1]
    case 4: return buf.readUInt32BE(at)
    case 8: {
      const high = buf.readUInt32BE(at)
      return high > 0x1fffff ? -1 : high * TWO_32 + buf.readUInt32BE(at + 4)
    }
  }
  let value = 0
  for (let i = 0; i < length; i++) value = value * 256 + buf[at + i]
  return value > Number.MAX_SAFE_INTEGER ? -1 : value
}

const ipv4Text = (buf, at) => `${buf[at]}.${buf[at + 1]}.${buf[at + 2]}.${buf[at + 3]}`

// NTP timestamp (RFC 7011 §6.1.9–10) to epoch ms. Seconds with the top bit
// clear are era 1 (from 2036-02-07), as RFC 4330 §3 reads them.
function ntpMilliseconds (buf, at) {
  const seconds = buf.readUInt32BE(at)
  const unix = seconds >= 0x80000000 ? seconds - NTP_TO_UNIX : seconds + TWO_32 - NTP_TO_UNIX
  return unix * 1000 + Math.floor(buf.readUInt32BE(at + 4) * 1000 / TWO_32)
}

// An options record into `values`, keyed by element name (`ie<ID>`,
// `<enterprise>.<ID>` for elements not in fields.js, v9 scopes by scope
// name): numbers for unsigned and time values that fit, text for addresses
// and strings, hex for the rest.
function readOptionsRecord (buf, at, end, plan, values) {
  for (let i = 0; i < plan.lengths.length; i++) {
    let length = plan.lengths[i]
    if (length === VARIABLE_LENGTH) {
      length = variableLength(buf, at, end)
      if (length < 0) return TRUNCATED
      at += buf[at] === 255 ? 3 : 1
    }
    if (end - at < length) return TRUNCATED
    values[plan.infos[i].name] = optionValue(buf, at, length, plan.infos[i].type)
    at += length
  }
  return at
}

function optionValue (buf, at, length, type) {
  if (type === 'ipv4' && length === 4) return ipv4Text(buf, at)
  if (type === 'ipv6' && length === 16) return ipv6Text(buf, at)
  if (type === 'string') return buf.toString('utf8', at, at + length).replace(/\0+$/, '')
  if (type !== 'bytes' && length >= 1 && length <= 8) {
    const value = readUnsigned(buf, at, length)
    if (value >= 0) return value
  }
  return buf.toString('hex', at, at + length)
}

module.exports = { planOf, readDataSet, OPS }
