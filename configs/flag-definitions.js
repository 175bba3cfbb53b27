'use strict'

const { resolveType, parseValue } = require('../lib/shared/value-types')

// What a flag definition may say (docs/options.md, Config flags).
const DEFINITION_KEYS = new Set([
  'alias', 'type', 'default', 'required', 'description', 'choices', 'min', 'max',
  'env', 'validate', 'secret', 'keywords', 'group'
])

function deepFreeze (value) {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Object.keys(value)) deepFreeze(value[key])
  }
  return value
}

function toKebab (name) {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)
}

function checkDefinition (name, def) {
  if (!def || typeof def !== 'object') throw new TypeError(`flag ${name}: definition must be an object`)
  const extra = Object.keys(def).filter((key) => !DEFINITION_KEYS.has(key))
  if (extra.length) throw new TypeError(`flag ${name}: unknown definition key(s) ${extra.join(', ')}`)
  for (const key of ['validate', 'choices'].filter((k) => def[k] !== undefined)) {
    if (key === 'validate' ? typeof def.validate !== 'function' : !Array.isArray(def.choices) && typeof def.choices !== 'function') {
      throw new TypeError(`flag ${name}: ${key} must be ${key === 'validate' ? 'a function' : 'an array or a function returning one'}`)
    }
  }
}

/**
 * One flag, ready to parse: its type object, every name it answers to
 * (kebab-case, camelCase, aliases) and its parsed default.
 * @param {string} name the config key
 * @param {object} def the declaration
 * @returns {Readonly<object>}
 */
function normalizeFlag (name, def) {
  checkDefinition(name, def)
  const type = resolveType(def.type)
  const aliases = [].concat(def.alias || [])
  const names = [...new Set([toKebab(name), name, ...aliases])]
  const flag = { ...def, name, kebab: toKebab(name), type, aliases, names }
  flag.defaultValue = defaultOf(flag)
  return Object.freeze(flag)
}

// An empty string is a fine default (a prefix, a label); as a given value it
// means the value is missing.
function defaultOf (flag) {
  if (flag.default === undefined) return undefined
  if (flag.default === '') return flag.type.name === 'list' ? [] : ''
  const result = parseValue(flag, flag.default)
  if (result.error) throw new TypeError(`flag ${flag.name}: default ${result.error}`)
  return result.value
}

function indexNames (defs) {
  const lookup = new Map()
  for (const def of defs) {
    for (const alias of def.names) {
      const owner = lookup.get(alias)
      if (owner && owner !== def) throw new TypeError(`flags ${owner.name} and ${def.name} both use the name ${alias}`)
      lookup.set(alias, def)
    }
  }
  return lookup
}

const compiledCache = new WeakMap()

/**
 * The normalized flags of a flags object and a lookup from every name to
 * its flag. Flags objects are frozen, so each is compiled once.
 * @param {Readonly<Object<string, object>>} flags
 * @returns {{ defs: object[], lookup: Map<string, object> }}
 */
function compile (flags) {
  if (!compiledCache.has(flags)) {
    const defs = Object.entries(flags).map(([name, def]) => normalizeFlag(name, def))
    compiledCache.set(flags, { defs, lookup: indexNames(defs) })
  }
  return compiledCache.get(flags)
}

/**
 * `parent` with `changes` applied: a change merges into the existing
 * definition, a new name adds a flag, `null` removes one. Frozen.
 */
function mergeFlags (parent, changes) {
  const merged = { ...parent }
  for (const [name, change] of Object.entries(changes)) {
    if (change === null) delete merged[name]
    else merged[name] = { ...merged[name], ...change }
  }
  return deepFreeze(merged)
}

module.exports = { compile, mergeFlags, deepFreeze, toKebab }
