'use strict'

// Who may send (the `allow` option): IPv4 and IPv6 addresses and prefixes,
// compiled once into sorted, disjoint ranges per family and searched by
// bisection. The master asks once per datagram, so a lookup parses the
// address where it already lies (a batch entry's bytes, or a string written
// into a scratch buffer) into 32-bit words: no string, no allocation.
// An IPv4-mapped IPv6 address (::ffff:10.1.2.3, how a dual-stack socket
// reports an IPv4 sender) is the IPv4 address, as a source and as an entry.
// Node's net.BlockList does the same job, but takes a string and crosses
// into C++: on the native path's loop it measured 1.8 µs per lookup against
// 57 ns for this (benchmarks/allow-list.js, 23 entries), more than the
// master's whole cost per datagram.

const V4 = 4
const V6 = 6
const MAX_ADDRESS_TEXT = 64 // longer than any address text (45 characters)
const COLON = 58
const DOT = 46

/**
 * The addresses and prefixes of an allow-list: `allows(address)` for a
 * string (dgram's rinfo, a socket's remoteAddress), `allowsBytes(buf,
 * start, length)` for address text inside a buffer (a batch entry).
 */
class AllowList {
  /**
   * @param {string[]|string} entries addresses and prefixes ('10.0.0.0/8',
   *   '192.168.1.7', '::1', 'fd00::/8'), an array or one comma-separated string
   * @throws {AllowListEntryError} naming the first bad entry
   */
  constructor (entries) {
    const { v4, v6 } = compile(listOf(entries))
    this.v4Starts = Uint32Array.from(v4, (r) => r[0])
    this.v4Ends = Uint32Array.from(v4, (r) => r[1])
    this.v6Starts = new Uint32Array(v6.length * 4)
    this.v6Ends = new Uint32Array(v6.length * 4)
    v6.forEach(([start, end], i) => { this.v6Starts.set(start, i * 4); this.v6Ends.set(end, i * 4) })
    this.v6Count = v6.length
    this.words = new Uint32Array(4) // the parsed address of a lookup
    this.scratch = Buffer.alloc(MAX_ADDRESS_TEXT)
    this.lastAddress = null
    this.lastAllowed = false
  }

  /** Whether a source address (text) may send; an address that does not parse may not. */
  allows (address) {
    // Senders come in runs (one flow, one peer): dgram gives a new string per
    // datagram, but comparing it with the last one is cheaper than parsing.
    if (address === this.lastAddress) return this.lastAllowed
    // Node names a link-local sender with its zone (fe80::1%eth0); the
    // native receiver and the entries do not: the address is the same.
    const zone = typeof address === 'string' ? address.indexOf('%') : -1
    const text = zone === -1 ? address : address.slice(0, zone)
    const length = typeof text === 'string' && text.length <= MAX_ADDRESS_TEXT ? this.scratch.latin1Write(text, 0) : 0
    this.lastAllowed = length > 0 && this.allowsBytes(this.scratch, 0, length)
    this.lastAddress = address
    return this.lastAllowed
  }

  /** Whether the address whose text is `buf[start, start + length)` may send. */
  allowsBytes (buf, start, length) {
    const words = this.words
    const family = parseAddress(buf, start, start + length, words)
    if (family === V4) return inV4Ranges(this.v4Starts, this.v4Ends, words[0])
    if (family === V6) return inV6Ranges(this.v6Starts, this.v6Ends, this.v6Count, words)
    return false
  }
}

/** A bad `allow` entry; `entry` is the entry as given. */
class AllowListEntryError extends Error {
  constructor (entry, reason) {
    super(`${JSON.stringify(entry)} is not an address or prefix: ${reason}`)
    this.entry = entry
    this.reason = reason
  }
}

/** The first bad entry of an allow-list as an AllowListEntryError, or undefined. */
function allowListProblem (entries) {
  try {
    compile(listOf(entries))
    return undefined
  } catch (err) {
    if (err instanceof AllowListEntryError) return err
    throw err
  }
}

function listOf (entries) {
  const list = typeof entries === 'string' ? entries.split(',') : entries
  if (!Array.isArray(list) || list.length === 0) throw new AllowListEntryError(entries, 'expected a non-empty list of addresses and prefixes')
  return list
}

// Every entry as a range of its family; then sorted and merged, so that a
// lookup is one bisection and overlapping entries cost nothing.
function compile (list) {
  const v4 = []
  const v6 = []
  for (const entry of list) {
    const { family, words, prefix } = parseEntry(entry)
    if (family === V4) {
      const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0
      v4.push([(words[0] & mask) >>> 0, ((words[0] & mask) | ~mask) >>> 0])
    } else {
      const value = toBigInt(words)
      const hostBits = (1n << BigInt(128 - prefix)) - 1n
      v6.push([(value & ~hostBits), (value & ~hostBits) | hostBits])
    }
  }
  return {
    v4: merge(v4, (a, b) => a - b, (end) => end + 1),
    v6: merge(v6, (a, b) => (a < b ? -1 : a > b ? 1 : 0), (end) => end + 1n).map(([s, e]) => [toWords(s), toWords(e)])
  }
}

function merge (ranges, compare, after) {
  ranges.sort((a, b) => compare(a[0], b[0]))
  const merged = []
  for (const [start, end] of ranges) {
    const last = merged[merged.length - 1]
    if (last && compare(start, after(last[1])) <= 0) {
      if (compare(end, last[1]) > 0) last[1] = end
    } else {
      merged.push([start, end])
    }
  }
  return merged
}

function parseEntry (entry) {
  if (typeof entry !== 'string') throw new AllowListEntryError(entry, 'expected a string')
  const text = entry.trim()
  if (text === '') throw new AllowListEntryError(entry, 'empty entry')
  const slash = text.indexOf('/')
  const address = slash === -1 ? text : text.slice(0, slash)
  const words = new Uint32Array(4)
  const bytes = Buffer.from(address, 'latin1')
  const family = address.length <= MAX_ADDRESS_TEXT && address === bytes.toString('latin1') ? parseAddress(bytes, 0, bytes.length, words) : 0
  if (family === 0) throw new AllowListEntryError(entry, 'not an IPv4 or IPv6 address')
  const mapped = family === V4 && address.includes(':')
  const max = family === V4 && !mapped ? 32 : 128
  if (slash === -1) return { family, words, prefix: family === V4 ? 32 : 128 }
  const prefixText = text.slice(slash + 1)
  if (!/^\d{1,3}$/.test(prefixText)) throw new AllowListEntryError(entry, `the prefix length must be a number from 0 to ${max}`)
  const prefix = Number(prefixText)
  if (prefix > max) throw new AllowListEntryError(entry, `the prefix length ${prefix} is over ${max}`)
  if (!mapped) return { family, words, prefix }
  if (prefix < 96) throw new AllowListEntryError(entry, 'an IPv4-mapped prefix must be /96 or longer; or write the IPv4 prefix')
  return { family, words, prefix: prefix - 96 }
}

/**
 * Parses address text in `buf[start, end)` into `words` (4 × 32 bits, most
 * significant first; an IPv4 address, or an IPv4-mapped IPv6 one, in
 * words[0]). Returns 4, 6, or 0 for text that is not an address.
 */
function parseAddress (buf, start, end, words) {
  for (let i = start; i < end; i++) {
    if (buf[i] === COLON) return parseIPv6(buf, start, end, words)
  }
  const v4 = parseIPv4(buf, start, end)
  if (v4 < 0) return 0
  words[0] = v4
  return V4
}

// Dotted quad, decimal, no leading zeros (as net.isIPv4): the value, or -1.
function parseIPv4 (buf, start, end) {
  let value = 0
  let part = 0
  let digits = 0
  let dots = 0
  for (let i = start; i < end; i++) {
    const c = buf[i]
    if (c === DOT) {
      if (digits === 0 || dots === 3) return -1
      value = value * 256 + part
      dots++
      part = 0
      digits = 0
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && part === 0) return -1 // a leading zero
      part = part * 10 + c - 48
      if (++digits > 3 || part > 255) return -1
    } else {
      return -1
    }
  }
  if (dots !== 3 || digits === 0) return -1
  return value * 256 + part
}

const groups = new Uint16Array(8)

// RFC 4291 text: up to 8 hex groups, one '::', an optional dotted IPv4 tail.
function parseIPv6 (buf, start, end, words) {
  let count = 0
  let gap = -1
  let i = start
  if (end - start >= 2 && buf[i] === COLON && buf[i + 1] === COLON) {
    gap = 0
    i += 2
  }
  while (i < end) {
    let value = 0
    let j = i
    for (; j < end && j - i < 5; j++) {
      const h = hexValue(buf[j])
      if (h < 0) break
      value = value * 16 + h
    }
    if (j < end && buf[j] === DOT) { // the IPv4 tail ends the address
      const v4 = count <= 6 ? parseIPv4(buf, i, end) : -1
      if (v4 < 0) return 0
      groups[count++] = v4 >>> 16
      groups[count++] = v4 & 0xffff
      break
    }
    if (j === i || j - i > 4 || count === 8) return 0
    groups[count++] = value
    i = j
    if (i === end) break
    if (buf[i] !== COLON || i + 1 === end) return 0
    i++
    if (buf[i] === COLON) {
      if (gap >= 0) return 0
      gap = count
      i++
    }
  }
  if (gap < 0 ? count !== 8 : count > 7) return 0
  return wordsOf(count, gap, words)
}

// Expands the groups read (zeros at the gap) into words; an IPv4-mapped
// address (::ffff:0:0/96) becomes its IPv4 address.
function wordsOf (count, gap, words) {
  const zeros = gap < 0 ? 0 : 8 - count
  let g = 0
  for (let w = 0; w < 4; w++) {
    let word = 0
    for (let half = 0; half < 2; half++, g++) {
      const k = gap < 0 || g < gap ? g : g < gap + zeros ? -1 : g - zeros
      word = word * 65536 + (k < 0 ? 0 : groups[k])
    }
    words[w] = word
  }
  if (words[0] === 0 && words[1] === 0 && words[2] === 0xffff) {
    words[0] = words[3]
    return V4
  }
  return V6
}

function hexValue (c) {
  if (c >= 48 && c <= 57) return c - 48
  if (c >= 97 && c <= 102) return c - 87
  if (c >= 65 && c <= 70) return c - 55
  return -1
}

// The last range starting at or before `address` contains it, or none does.
function inV4Ranges (starts, ends, address) {
  let low = 0
  let high = starts.length - 1
  while (low <= high) {
    const mid = (low + high) >>> 1
    if (starts[mid] <= address) low = mid + 1
    else high = mid - 1
  }
  return high >= 0 && address <= ends[high]
}

function inV6Ranges (starts, ends, count, words) {
  let low = 0
  let high = count - 1
  while (low <= high) {
    const mid = (low + high) >>> 1
    if (compareWords(starts, mid * 4, words) <= 0) low = mid + 1
    else high = mid - 1
  }
  return high >= 0 && compareWords(ends, high * 4, words) >= 0
}

function compareWords (table, at, words) {
  for (let k = 0; k < 4; k++) {
    const a = table[at + k]
    const b = words[k]
    if (a !== b) return a < b ? -1 : 1
  }
  return 0
}

function toBigInt (words) {
  return (BigInt(words[0]) << 96n) | (BigInt(words[1]) << 64n) | (BigInt(words[2]) << 32n) | BigInt(words[3])
}

function toWords (value) {
  return Uint32Array.from([96n, 64n, 32n, 0n], (shift) => Number((value >> shift) & 0xffffffffn))
}

module.exports = { AllowList, AllowListEntryError, allowListProblem, parseAddress }
