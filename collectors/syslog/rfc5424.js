'use strict'

// The RFC 5424 reader: the header after PRI, STRUCTURED-DATA and MSG, read
// strictly from the bytes of ctx.buf (the parse state parser.js makes).
// Header fields, SD-IDs and PARAM-NAMEs are ASCII, sliced from ctx.text;
// PARAM-VALUEs and MSG are decoded as UTF-8. What breaks the grammar is
// refused with a reason; parser.js never re-reads it as RFC 3164.
// The structuredData map's keys are the names encoded by sd-names.js (no
// `$`, no `.`); sdElements holds them as sent.

const { BIT, SP, QUOTE, DASH, EQ, OPEN, BACKSLASH, CLOSE, isDigit, deviate } = require('./syntax')
const { readRfc3339 } = require('./syslog-time')
const { utf8TextKept } = require('./utf8-text')
const { encodeSdName } = require('./sd-names')

const DUPLICATE_SD_ID = BIT['duplicate-sd-id']
const DOLLAR = 0x24
const PERCENT = 0x25
const DOT = 0x2e
// RFC 5424 §6: HOSTNAME, APP-NAME, PROCID, MSGID are NILVALUE or 1*N PRINTUSASCII.
const HOSTNAME = { limit: 255, reason: 'bad-hostname' }
const APP_NAME = { limit: 48, reason: 'bad-app-name' }
const PROCID = { limit: 128, reason: 'bad-procid' }
const MSGID = { limit: 32, reason: 'bad-msgid' }

/**
 * Reads an RFC 5424 message from buf[at] (just after PRI) to `end`.
 * VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP MSGID SP STRUCTURED-DATA [SP MSG]
 * @returns {object|string} the record's fields, or the reason it is refused
 */
function parse5424 (ctx, at, end) {
  const buf = ctx.buf
  let i = at
  while (i < end && isDigit(buf[i]) && i - at < 4) i++
  if (i - at > 3 || buf[i] !== SP || i >= end) return 'bad-version'
  if (i - at !== 1 || buf[at] !== 0x31) return 'unsupported-version'
  const stamp = readTimestamp5424(buf, i + 1, end)
  if (typeof stamp === 'string') return stamp
  const fields = { format: '5424', timestamp: stamp.date, timestampText: dateHoldsAll(buf, i + 1, stamp) ? null : ctx.text.slice(i + 1, stamp.end), host: null, app: null, procid: null, msgid: null, structuredData: null, sdElements: null, message: '', messageRaw: undefined }
  i = stamp.end + 1
  let j = headerField(ctx, HOSTNAME, i, end)
  if (j < 0) return ctx.reason
  fields.host = nilOrText(ctx, i, j)
  if ((i = headerField(ctx, APP_NAME, j + 1, end)) < 0) return ctx.reason
  fields.app = nilOrText(ctx, j + 1, i)
  if ((j = headerField(ctx, PROCID, i + 1, end)) < 0) return ctx.reason
  fields.procid = nilOrText(ctx, i + 1, j)
  if ((i = headerField(ctx, MSGID, j + 1, end)) < 0) return ctx.reason
  fields.msgid = nilOrText(ctx, j + 1, i)
  i++
  const sdEnd = readStructuredData(ctx, fields, i, end)
  if (typeof sdEnd === 'string') return sdEnd
  readMessage(ctx, fields, sdEnd, end)
  return fields
}

// Whether the Date says all the timestamp did: UTC ("Z") and at most
// millisecond digits. Otherwise the record keeps the text as sent too
// (microseconds, the sender's offset); storing it always made every stored
// document larger for nothing.
function dateHoldsAll (buf, at, stamp) {
  if (stamp.date === null) return true
  if (buf[stamp.end - 1] !== 0x5a) return false
  return buf[at + 19] !== 0x2e || stamp.end - 1 - (at + 20) <= 3
}

// TIMESTAMP then SP: { date, end } (date null for NILVALUE, end at the SP), or a reason.
function readTimestamp5424 (buf, at, end) {
  if (buf[at] === DASH) {
    if (at + 1 >= end) return 'truncated-header'
    return buf[at + 1] === SP ? { date: null, end: at + 1 } : 'bad-timestamp'
  }
  let space = at
  while (space < end && buf[space] !== SP) space++
  if (space >= end) return 'truncated-header'
  const t = readRfc3339(buf, at, space, true)
  if (t === null) return 'bad-timestamp'
  return { date: t, end: space }
}

// NILVALUE / 1*limit PRINTUSASCII, then SP. Returns the offset of the SP, or -1 (ctx.reason).
function headerField (ctx, rule, at, end) {
  const buf = ctx.buf
  let i = at
  while (i < end && buf[i] > SP && buf[i] < 0x7f) i++
  if (i >= end) return fail(ctx, 'truncated-header')
  if (buf[i] !== SP || i === at || i - at > rule.limit) return fail(ctx, rule.reason)
  return i
}

// Header bytes are ASCII: substrings of one latin1 decoding of the message, not a native call each.
function nilOrText (ctx, start, end) {
  return end - start === 1 && ctx.buf[start] === DASH ? null : ctx.text.slice(start, end)
}

function fail (ctx, reason) {
  ctx.reason = reason
  return -1
}

// MSG = MSG-ANY / MSG-UTF8 (§6.4): a BOM announces UTF-8 and is not part of the text.
function readMessage (ctx, fields, at, end) {
  if (at >= end) {
    fields.message = ''
    return
  }
  let start = at + 1
  const buf = ctx.buf
  if (buf[start] === 0xef && buf[start + 1] === 0xbb && buf[start + 2] === 0xbf && start + 2 < end) start += 3
  fields.message = utf8TextKept(ctx, start, end)
  fields.messageRaw = ctx.rawBytes
}

// STRUCTURED-DATA = NILVALUE / 1*SD-ELEMENT, then end or SP. Returns the offset after it, or a reason.
function readStructuredData (ctx, fields, at, end) {
  const buf = ctx.buf
  fields.structuredData = null
  fields.sdElements = null
  if (at >= end) return 'truncated-header'
  if (buf[at] === DASH) return at + 1 === end || buf[at + 1] === SP ? at + 1 : 'bad-structured-data'
  if (buf[at] !== OPEN) return 'bad-structured-data'
  // The map says it all unless an SD-ID repeats, a param repeats after
  // another name, a name starts with a digit (an object puts such keys
  // first), or a value is not UTF-8 (its bytes are in the element list);
  // only then is the list kept too, read in a second pass (building it for
  // every message, to be thrown away, cost every line its allocations).
  const i = readElements(ctx, null, at, end)
  if (i < 0) return ctx.reason
  if (i < end && buf[i] !== SP) return 'bad-structured-data'
  fields.structuredData = ctx.sdMap
  if (ctx.sdOrdered) {
    const elements = []
    readElements(ctx, elements, at, end)
    fields.structuredData = ctx.sdMap
    fields.sdElements = elements
  }
  return i
}

// Every SD-ELEMENT from `at` into a new map (ctx.sdMap) and, when given,
// the element list: the offset after them, or -1 (ctx.reason).
function readElements (ctx, elements, at, end) {
  const map = {}
  ctx.sdMap = map
  let i = at
  while (i < end && ctx.buf[i] === OPEN) {
    i = readElement(ctx, map, elements, i + 1, end)
    if (i < 0) return -1
  }
  return i
}

// SD-ID *(SP PARAM-NAME "=" DQUOTE PARAM-VALUE DQUOTE) "]", from after the "[".
function readElement (ctx, map, elements, at, end) {
  const buf = ctx.buf
  let i = nameEnd(ctx, at, end)
  if (i < 0) return fail(ctx, 'bad-structured-data')
  const id = ctx.text.slice(at, i)
  const key = ctx.nameEncoded ? encodeSdName(id) : id // one-to-one: a repeated key is a repeated SD-ID
  let params = own(map, key)
  if (params !== undefined && !deviate(ctx, DUPLICATE_SD_ID)) return fail(ctx, 'duplicate-sd-id')
  if (params === undefined) params = define(map, key, {})
  else ctx.sdOrdered = true
  if (isDigit(buf[at])) ctx.sdOrdered = true
  const list = elements === null ? null : []
  if (list !== null) elements.push({ id, params: list })
  ctx.lastParam = ''
  while (buf[i] === SP && i < end) {
    const from = i + 1
    i = nameEnd(ctx, from, end)
    if (i < 0 || buf[i] !== EQ || buf[i + 1] !== QUOTE || i + 1 >= end) return fail(ctx, 'bad-structured-data')
    const name = ctx.text.slice(from, i)
    i = readValue(ctx, list, params, name, ctx.nameEncoded ? encodeSdName(name) : name, i + 2, end)
    if (i < 0) return -1
  }
  if (i >= end || buf[i] !== CLOSE) return fail(ctx, 'bad-structured-data')
  return i + 1
}

// SD-NAME = 1*32 PRINTUSASCII except '=', SP, ']', '"': the offset after it,
// or -1. ctx.nameEncoded: whether it holds '$' '%' '.', which its map key encodes.
function nameEnd (ctx, at, end) {
  const buf = ctx.buf
  let encoded = false
  let i = at
  for (; i < end; i++) {
    const c = buf[i]
    if (c <= SP || c >= 0x7f || c === EQ || c === CLOSE || c === QUOTE) break
    if (c === DOLLAR || c === PERCENT || c === DOT) encoded = true
  }
  ctx.nameEncoded = encoded
  return i === at || i - at > 32 || i >= end ? -1 : i
}

// PARAM-VALUE up to the closing quote (§6.3.3): '"', '\' and ']' must be
// escaped; a backslash before anything else is a backslash, kept with what follows.
// `list`: the element's params as sent, or null in the first pass.
function readValue (ctx, list, params, name, key, at, end) {
  const buf = ctx.buf
  let escapes = 0
  let high = 0
  let i = at
  for (; i < end; i++) {
    const c = buf[i]
    if (c === QUOTE) break
    high |= c
    if (c === CLOSE) return fail(ctx, 'unescaped-bracket')
    if (c === BACKSLASH && i + 1 < end) {
      const n = buf[i + 1]
      if (n === QUOTE || n === BACKSLASH || n === CLOSE) {
        escapes++
        i++
      }
    }
  }
  if (i >= end) return fail(ctx, 'bad-structured-data')
  let value
  if (escapes !== 0) value = high < 0x80 ? unescapeAscii(buf, ctx.text, at, i) : unescape(ctx, at, i)
  else value = high < 0x80 ? ctx.text.slice(at, i) : utf8TextKept(ctx, at, i)
  if (ctx.rawBytes !== undefined) {
    if (list !== null) list.push([name, value, ctx.rawBytes]) // the name as sent; the map's key is encoded
    ctx.rawBytes = undefined
    ctx.sdOrdered = true
  } else if (list !== null) list.push([name, value])
  // a repeat right after its own name is an array in the map, in order;
  // one after another name is not
  if ((addParam(params, key, value) && ctx.lastParam !== name) || isDigit(name.charCodeAt(0))) ctx.sdOrdered = true
  ctx.lastParam = name
  return i + 1
}

function unescapeAscii (buf, text, start, end) {
  let value = ''
  let from = start
  for (let i = start; i < end - 1; i++) {
    if (buf[i] === BACKSLASH) {
      const n = buf[i + 1]
      if (n === QUOTE || n === BACKSLASH || n === CLOSE) {
        value += text.slice(from, i)
        from = ++i
      }
    }
  }
  return value + text.slice(from, end)
}

function unescape (ctx, start, end) {
  const buf = ctx.buf
  const out = Buffer.allocUnsafe(end - start)
  let n = 0
  for (let i = start; i < end; i++) {
    const c = buf[i]
    if (c === BACKSLASH && (buf[i + 1] === QUOTE || buf[i + 1] === BACKSLASH || buf[i + 1] === CLOSE) && i + 1 < end) i++
    out[n++] = buf[i]
  }
  const saved = ctx.buf
  ctx.buf = out
  const value = utf8TextKept(ctx, 0, n)
  ctx.buf = saved
  return value
}

// Repeated params (§6.3.3 allows them) become arrays in the map; sdElements
// keeps their order. True when the name was there already.
function addParam (params, name, value) {
  const prior = own(params, name)
  if (prior === undefined) {
    define(params, name, value)
    return false
  }
  if (Array.isArray(prior)) prior.push(value)
  else define(params, name, [prior, value])
  return true
}

function own (target, key) {
  return Object.prototype.hasOwnProperty.call(target, key) ? target[key] : undefined
}

// Own data properties even for a name like "__proto__": sender text is never
// looked up on, or written through, a prototype.
function define (target, key, value) {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  else target[key] = value
  return value
}

module.exports = { parse5424 }
