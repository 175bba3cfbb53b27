'use strict'

const InvalidOptionError = require('../../exceptions/invalid-option-error')

/*
 * Settings of a collector and its workers, declared once in the shape and
 * vocabulary of lib/master/options.js's OPTIONS: each entry is `{ type,
 * default, range, choices, env, secret, group, description, flag, validate }`, `type`
 * a flag type of lib/shared/value-types.js, `flag: false` for a worker setting
 * only code passes (in `workerOptions`). The config's flags, the workers'
 * defaults, the keys a collector forwards to its workers, --help and the
 * tables of docs/collectors.md come from the declarations (workers/mongo-settings.js,
 * collectors/*-settings.js); the checks here are the ones code gets.
 * Pure data and this checker: the CLI and a worker load them without the
 * driver or the master.
 */

const ENTRY_KEYS = new Set(['type', 'default', 'range', 'choices', 'env', 'secret', 'group', 'description', 'flag', 'validate'])
const NUMERIC = { integer: [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER], duration: [0, Number.MAX_SAFE_INTEGER], size: [0, Number.MAX_SAFE_INTEGER], port: [0, 65535], number: [-Infinity, Infinity] }
const TYPES = new Set([...Object.keys(NUMERIC), 'string', 'path', 'boolean', 'list'])
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * Checks and freezes a table of settings (a mistake surfaces where it is
 * declared, not when a user first sets the setting).
 * @param {Object<string, object>} table
 * @returns {Readonly<Object<string, object>>}
 */
function declareSettings (table) {
  for (const [name, entry] of Object.entries(table)) {
    const extra = Object.keys(entry).filter((key) => !ENTRY_KEYS.has(key))
    if (extra.length) throw InvalidOptionError.problem(`settings.${name}`, `unknown key(s) ${extra.join(', ')}`)
    if (!TYPES.has(entry.type)) throw InvalidOptionError.problem(`settings.${name}`, `type must be one of ${[...TYPES].join(', ')}`)
    if (entry.flag !== undefined && entry.flag !== false) throw InvalidOptionError.problem(`settings.${name}`, 'flag may only be false (code only)')
    if (entry.env !== undefined && (typeof entry.env !== 'string' || !ENV_NAME.test(entry.env))) throw InvalidOptionError.problem(`settings.${name}`, `env must be the name of an environment variable (letters, digits, _), got ${JSON.stringify(entry.env)}`)
    if (entry.default !== undefined) checkDefault(name, entry)
    Object.freeze(entry)
    if (Array.isArray(entry.default)) Object.freeze(entry.default)
  }
  return Object.freeze(table)
}

// A default that is not a value of its own setting is the declaration's mistake, said so (not as a flag given wrong).
// (Each mistake in a declaration is an InvalidOptionError: one line, ERR_INVALID_OPTION, the CLI prints it so.)
function checkDefault (name, entry) {
  try {
    checkSetting(name, entry, entry.default)
  } catch (err) {
    if (!(err instanceof InvalidOptionError)) throw err
    throw InvalidOptionError.problem(`settings.${name}`, `its default ${JSON.stringify(entry.default)} is not a value of it: it ${err.expected}`)
  }
}

/** The default of each setting that has one. */
function settingsDefaults (table) {
  return Object.fromEntries(Object.entries(table).filter(([, entry]) => entry.default !== undefined).map(([name, entry]) => [name, entry.default]))
}

/** The settings a collector takes as options and forwards to its workers: those with a flag. */
function forwardedKeys (table) {
  return Object.keys(table).filter((name) => table[name].flag !== false)
}

function choicesOf (entry) {
  return typeof entry.choices === 'function' ? entry.choices() : entry.choices
}

/**
 * Throws InvalidOptionError when `value` is not a value of the setting:
 * its type, its range (a duration in ms), its choices.
 */
function checkSetting (name, entry, value) {
  checkType(name, entry, value)
  const problem = entry.validate ? entry.validate(value) : undefined
  if (problem) throw new InvalidOptionError(name, value, problem)
}

// validate: a function of the value giving what is wrong with it, or undefined.
function checkType (name, entry, value) {
  const numeric = NUMERIC[entry.type]
  if (numeric) {
    const [min, max] = entry.range || numeric
    const whole = entry.type !== 'number'
    const ok = typeof value === 'number' && (whole ? Number.isInteger(value) : Number.isFinite(value)) && value >= min && value <= max
    const unit = entry.type === 'duration' ? ' (ms)' : ''
    if (!ok) throw new InvalidOptionError(name, value, `must be ${whole ? 'an integer' : 'a number'} from ${min} to ${max}${unit}`)
    return
  }
  if (entry.type === 'boolean') {
    if (typeof value !== 'boolean') throw new InvalidOptionError(name, value, 'must be true or false')
    return
  }
  const choices = choicesOf(entry)
  const among = choices ? ` among ${choices.join(', ')}` : ''
  if (entry.type === 'list') {
    if (!Array.isArray(value) || value.some((item) => typeof item !== 'string' || (choices && !choices.includes(item)))) {
      throw new InvalidOptionError(name, value, `must be an array of strings${among}`)
    }
    return
  }
  if (typeof value !== 'string' || (value === '' && entry.type === 'path')) throw new InvalidOptionError(name, value, entry.type === 'path' ? 'must be a path' : 'must be a string')
  if (choices && !choices.includes(value)) throw new InvalidOptionError(name, value, `must be one of ${choices.join(', ')}`)
}

/**
 * The declared settings of `values` checked (undefined: not given); other
 * keys are left alone (a subclass's own). Throws on the first bad one.
 * @returns {object} values
 */
function checkSettings (table, values) {
  for (const [name, entry] of Object.entries(table)) {
    if (values[name] !== undefined) checkSetting(name, entry, values[name])
  }
  return values
}

/**
 * `layers` merged over the declared defaults (an undefined value does not
 * hide a default), then checked.
 * @param {Object<string, object>} table
 * @param {...object} layers later ones win
 * @returns {object}
 */
function resolveSettings (table, ...layers) {
  const settings = settingsDefaults(table)
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer || {})) if (value !== undefined) settings[key] = value
  }
  return checkSettings(table, settings)
}

module.exports = { declareSettings, settingsDefaults, forwardedKeys, checkSettings, resolveSettings }
