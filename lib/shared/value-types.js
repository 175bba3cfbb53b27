'use strict'
const path = require('node:path')

/*
 * Value types of settings and config flags, one declaration for the
 * argv parser (configs/), the master's options and the workers' settings
 * (a worker reads a duration with them and loads no argv code). A type is `{ name, metavar, parse(raw) }`
 * where parse returns `{ value }` or `{ error }`; numeric types may carry a
 * built-in `min`/`max` and `format(value)` renders a value for help text.
 * Error messages never contain the raw value: the caller decides whether
 * it may be shown (secret flags).
 */

const DURATION_UNITS = { d: 86400000, h: 3600000, m: 60000, s: 1000, ms: 1 }
const TRUE_WORDS = new Set(['true', '1', 'yes', 'on'])
const FALSE_WORDS = new Set(['false', '0', 'no', 'off'])
const INTEGER = /^[+-]?\d+$/
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i
const DURATION = /^(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|h|d)?$/i
// Sizes in powers of 1024 (k = KiB, m = MiB, g = GiB, t = TiB).
const SIZE_UNITS = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }
const SIZE = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/i

function ok (value) {
  return { value }
}

function fail (error) {
  return { error }
}

const parseString = (raw) => ok(String(raw))

function parseInteger (raw) {
  const text = String(raw).trim()
  if (!INTEGER.test(text)) return fail('expected an integer')
  const n = Number(text)
  return Number.isSafeInteger(n) ? ok(n) : fail('integer too large')
}

function parseNumber (raw) {
  const text = String(raw).trim()
  return NUMBER.test(text) ? ok(Number(text)) : fail('expected a number')
}

function parsePort (raw) {
  const result = parseInteger(raw)
  return result.error ? fail('expected a port number (0-65535)') : result
}

function parseBoolean (raw) {
  if (typeof raw === 'boolean') return ok(raw)
  const word = String(raw).trim().toLowerCase()
  if (TRUE_WORDS.has(word)) return ok(true)
  if (FALSE_WORDS.has(word)) return ok(false)
  return fail('expected true or false (also yes/no, on/off, 1/0)')
}

function parseDuration (raw) {
  const match = DURATION.exec(String(raw).trim())
  if (!match) return fail('expected a duration such as 250, 250ms, 5s, 2m, 1h or 1d')
  const unit = DURATION_UNITS[(match[2] || 'ms').toLowerCase()]
  return ok(Math.round(Number(match[1]) * unit))
}

function formatDuration (ms) {
  const unit = ['d', 'h', 'm', 's'].find((u) => ms > 0 && ms % DURATION_UNITS[u] === 0)
  if (ms === 0) return '0'
  return unit ? `${ms / DURATION_UNITS[unit]}${unit}` : `${ms}ms`
}

function parseSize (raw) {
  const match = SIZE.exec(String(raw).trim())
  const bytes = match && Math.round(Number(match[1]) * SIZE_UNITS[match[2].toLowerCase()])
  if (!match) return fail('expected a size in bytes such as 65536, 512k, 256m or 1g (powers of 1024)')
  return Number.isSafeInteger(bytes) ? ok(bytes) : fail('size too large')
}
const formatSize = (bytes) => ['t', 'g', 'm', 'k'].reduce((text, u) => text || (bytes > 0 && bytes % SIZE_UNITS[u] === 0 ? `${bytes / SIZE_UNITS[u]}${u}` : ''), '') || String(bytes)

function parseList (raw) {
  const items = [].concat(raw).join(',').split(',')
  return ok(items.map((item) => item.trim()).filter(Boolean))
}

// Paths are resolved against the working directory now: a relative path
// would otherwise be resolved against whichever module later requires it.
function parsePath (raw) {
  return ok(path.resolve(String(raw)))
}

const flagTypes = Object.freeze({
  string: Object.freeze({ name: 'string', metavar: 'string', parse: parseString }),
  integer: Object.freeze({ name: 'integer', metavar: 'integer', parse: parseInteger }),
  number: Object.freeze({ name: 'number', metavar: 'number', parse: parseNumber }),
  boolean: Object.freeze({ name: 'boolean', metavar: '', parse: parseBoolean }),
  port: Object.freeze({ name: 'port', metavar: 'port', parse: parsePort, min: 0, max: 65535 }),
  duration: Object.freeze({ name: 'duration', metavar: 'duration', parse: parseDuration, min: 0, format: formatDuration }),
  size: Object.freeze({ name: 'size', metavar: 'bytes', parse: parseSize, min: 0, format: formatSize }),
  list: Object.freeze({ name: 'list', metavar: 'a,b,...', parse: parseList, format: (items) => items.join(',') }),
  path: Object.freeze({ name: 'path', metavar: 'path', parse: parsePath })
})

/**
 * Resolve a flag's `type` (a name from `flagTypes` or a custom type object
 * with `name` and `parse`) to a type object.
 * @param {string|{name: string, parse: Function}} type
 * @returns {{name: string, metavar: string, parse: Function}}
 * @throws {TypeError} on an unknown type
 */
function resolveType (type = 'string') {
  if (typeof type === 'string' && Object.hasOwn(flagTypes, type)) return flagTypes[type]
  if (type && typeof type === 'object' && typeof type.parse === 'function') {
    return { metavar: type.name || 'value', ...type }
  }
  throw new TypeError(`unknown flag type ${JSON.stringify(type)}; known: ${Object.keys(flagTypes).join(', ')}`)
}

/**
 * Repeated flags: lists accumulate, every other type takes the last value.
 * @param {{name: string}} type
 * @param {*} raw one value or the array minimist makes of a repeated flag
 * @returns {*}
 */
function lastGiven (type, raw) {
  return Array.isArray(raw) && type.name !== 'list' ? raw[raw.length - 1] : raw
}

function isMissing (raw) {
  return raw === '' || (Array.isArray(raw) && raw.includes(''))
}

function keywordValue (def, raw) {
  const word = typeof raw === 'string' ? raw.trim().toLowerCase() : undefined
  if (def.keywords && word !== undefined && Object.hasOwn(def.keywords, word)) {
    return ok(def.keywords[word]())
  }
}

function rangeError (value, min, max, format = String) {
  const tooLow = min !== undefined && value < min
  const tooHigh = max !== undefined && value > max
  if (!tooLow && !tooHigh) return undefined
  if (min !== undefined && max !== undefined) return `must be between ${format(min)} and ${format(max)}`
  return tooLow ? `must be at least ${format(min)}` : `must be at most ${format(max)}`
}

function checkRange (def, value) {
  if (typeof value !== 'number') return undefined
  const min = def.min ?? def.type.min
  const max = def.max ?? def.type.max
  const error = rangeError(value, min, max, def.type.format)
  // `--duration 5` meant as seconds reads as 5 ms: say which unit it was
  return error && def.type.name === 'duration' ? `${error} (a bare number is milliseconds)` : error
}

/**
 * A flag's choices now: `choices` may be a function, so that a flag drawn
 * from a registry (protocols) offers what was registered after it was declared.
 * @param {{choices?: string[]|function(): string[]}} def
 * @returns {string[]|undefined}
 */
function choicesOf (def) {
  return typeof def.choices === 'function' ? def.choices() : def.choices
}

function checkChoices (def, value) {
  const choices = choicesOf(def)
  if (!choices) return undefined
  const bad = [].concat(value).some((item) => !choices.includes(item))
  return bad ? `must be one of ${choices.join(', ')}` : undefined
}

/**
 * Turn one raw value (from argv, env or the default) into the flag's value:
 * missing value, keywords, type, range and choices, in that order.
 * `def` is a normalized flag definition whose `type` is a type object.
 * @param {object} def
 * @param {*} raw
 * @returns {{value: *}|{error: string, missing?: boolean}}
 */
function parseValue (def, raw) {
  if (isMissing(raw)) return { error: 'missing value', missing: true }
  const given = lastGiven(def.type, raw)
  const result = keywordValue(def, given) || def.type.parse(given)
  if (result.error) return def.keywords ? fail(`${result.error} or ${Object.keys(def.keywords).join(', ')}`) : result
  const error = checkRange(def, result.value) || checkChoices(def, result.value)
  return error ? fail(error) : result
}

/**
 * Render a value of a type for help text.
 * @param {{format?: Function}} type
 * @param {*} value
 * @returns {string}
 */
function formatValue (type, value) {
  if (type.format) return type.format(value)
  return Array.isArray(value) ? value.join(',') : String(value)
}

module.exports = { flagTypes, resolveType, parseValue, formatValue, lastGiven, choicesOf }
