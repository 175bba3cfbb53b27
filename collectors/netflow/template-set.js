'use strict'

// Template records, shared by NetFlow v9 (RFC 3954 §5.2, §6.1: flowset 0
// templates, 1 options templates) and IPFIX (RFC 7011 §3.4: set 2
// templates, 3 options templates). A template is stored as a plain value,
// `{ fields: [[element, length, enterprise], ...], scope }` (scope: how many
// of the fields are options scope fields, 0 for a data template), so a
// caller can keep it anywhere JSON goes and hand it back after a restart.
//
// IPFIX withdraws with a record of field count 0 (§8.1): one template by
// its ID, or all of the set's kind when the ID is the set's own (2 or 3).
// v9 has neither withdrawal nor the enterprise bit nor variable lengths:
// a field count of 0 or a length of 65535 is a bad v9 template.

/** Field count bound: real templates carry 10–80 fields; more is a sender making work. */
const MAX_TEMPLATE_FIELDS = 128
/** IPFIX field length meaning "variable: a 1- or 3-byte length prefix" (RFC 7011 §7). */
const VARIABLE_LENGTH = 65535

const V9 = Object.freeze({ TEMPLATES: 0, OPTIONS: 1 })
const IPFIX = Object.freeze({ TEMPLATES: 2, OPTIONS: 3 })

/**
 * The template records of one set, as actions in order: `{ id, template }`
 * to learn, `{ id, withdraw: true }` to withdraw one, `{ withdrawAll: true }`
 * to withdraw every template of the set's kind (data or options). Bytes too
 * few for a record at the end are padding (RFC 7011 §3.3.1).
 *
 * @param {Buffer} buf
 * @param {number} start first byte after the set header
 * @param {number} end the set's end
 * @param {number} setId 0/1 (v9) or 2/3 (IPFIX)
 * @returns {Array<object>|string} the actions, or the reason of a refusal
 */
function readTemplateSet (buf, start, end, setId) {
  const ipfix = setId >= IPFIX.TEMPLATES
  const options = setId === V9.OPTIONS || setId === IPFIX.OPTIONS
  const headerSize = setId === V9.OPTIONS ? 6 : 4
  const actions = []
  let at = start
  while (end - at >= headerSize) {
    const id = buf.readUInt16BE(at)
    const second = buf.readUInt16BE(at + 2)
    if (ipfix && second === 0) {
      if (id === setId) actions.push({ withdrawAll: true })
      else if (id < 256) return 'netflow-bad-template'
      else actions.push({ id, withdraw: true })
      at += 4
      continue
    }
    if (id < 256) return 'netflow-bad-template'
    let count = second
    let scope = 0
    at += headerSize
    if (setId === V9.OPTIONS) {
      // v9 gives the scope and option lengths in bytes, 4 per field.
      const optionBytes = buf.readUInt16BE(at - 2)
      if (second % 4 !== 0 || optionBytes % 4 !== 0) return 'netflow-bad-template'
      scope = second / 4
      count = scope + optionBytes / 4
    } else if (options) {
      if (end - at < 2) return 'netflow-truncated'
      scope = buf.readUInt16BE(at)
      at += 2
    }
    if (count === 0 || count > MAX_TEMPLATE_FIELDS || (options && (scope === 0 || scope > count))) return 'netflow-bad-template'
    const fields = readSpecifiers(buf, at, end, count, ipfix)
    if (typeof fields === 'string') return fields
    at = fields.end
    actions.push({ id, template: { fields: fields.list, scope } })
  }
  return actions
}

// `count` field specifiers from `at`: element ID (IPFIX: the top bit says
// an enterprise number follows), length. Returns { list, end } or a reason.
function readSpecifiers (buf, at, end, count, ipfix) {
  const list = []
  let minLength = 0
  for (let i = 0; i < count; i++) {
    if (end - at < 4) return 'netflow-truncated'
    const raw = buf.readUInt16BE(at)
    const length = buf.readUInt16BE(at + 2)
    at += 4
    let enterprise = 0
    if (ipfix && raw & 0x8000) {
      if (end - at < 4) return 'netflow-truncated'
      enterprise = buf.readUInt32BE(at)
      at += 4
    }
    if (!ipfix && length === VARIABLE_LENGTH) return 'netflow-bad-template'
    minLength += length === VARIABLE_LENGTH ? 1 : length
    list.push([ipfix ? raw & 0x7fff : raw, length, enterprise])
  }
  // A record of no bytes would let one set hold endless records.
  return minLength === 0 ? 'netflow-bad-template' : { list, end: at }
}

/** Whether two stored template values say the same thing (a refresh need not be written again). */
function sameTemplate (a, b) {
  if (!a || !b || a.scope !== b.scope || !Array.isArray(a.fields) || !Array.isArray(b.fields) || a.fields.length !== b.fields.length) return false
  for (let i = 0; i < a.fields.length; i++) {
    const x = a.fields[i]
    const y = b.fields[i]
    if (!Array.isArray(x) || !Array.isArray(y) || x[0] !== y[0] || x[1] !== y[1] || x[2] !== y[2]) return false
  }
  return true
}

module.exports = { readTemplateSet, sameTemplate, MAX_TEMPLATE_FIELDS, VARIABLE_LENGTH, V9, IPFIX }
