'use strict'

const { parseValue, lastGiven } = require('../lib/shared/value-types')

// An object, not a Symbol: minimist runs its number test on defaults. Every
// flag name defaults to it, so that a flag not given is told apart.
const NOT_GIVEN = Object.freeze({ notGiven: true })

function redact (def, text) {
  return def.secret ? '<hidden>' : text
}

/**
 * A problem with one flag's value, as InvalidConfigError lists it; a secret
 * value is never shown.
 * @returns {{ flag: string, option: string, message: string }}
 */
function flagProblem (def, message, raw, source) {
  const shown = raw === undefined || raw === '' ? '' : `, got ${redact(def, JSON.stringify(raw))}`
  const from = source === 'env' ? ` (from environment variable ${def.env})` : ''
  return { flag: def.kebab, option: def.name, message: `${message}${shown}${from}` }
}

// Precedence: argv, then the environment, then the default.
function pickRaw (def, parsed, env) {
  if (parsed[def.name] !== NOT_GIVEN) return { raw: parsed[def.name], source: 'argv' }
  const fromEnv = def.env ? env[def.env] : undefined
  if (fromEnv !== undefined && fromEnv !== '') return { raw: fromEnv, source: 'env' }
  return { raw: def.default, source: 'default' }
}

function runValidate (def, value, raw, source) {
  const message = def.validate && def.validate(value)
  if (!message) return undefined
  const text = def.secret ? String(message).split(String(raw)).join('<hidden>') : String(message)
  return flagProblem(def, text, raw, source)
}

/**
 * One flag's value from minimist's output and the environment.
 * @returns {{ value?: *, source: 'argv'|'env'|'default', problem?: object }}
 */
function resolveFlag (def, parsed, env) {
  const picked = pickRaw(def, parsed, env)
  const { source } = picked
  if (source === 'default') return { value: def.defaultValue, source }
  const raw = lastGiven(def.type, picked.raw)
  const result = parseValue(def, raw)
  const shownRaw = result.missing ? undefined : raw
  if (result.error) return { source, problem: flagProblem(def, result.error, shownRaw, source) }
  return { value: result.value, source, problem: runValidate(def, result.value, raw, source) }
}

/**
 * Every flag resolved: the config, which flags were given (argv or env),
 * and the problems found (a required flag missing among them, unless help
 * was asked for).
 */
function resolveAll (defs, parsed, env) {
  const config = {}
  const given = new Set()
  const problems = []
  for (const def of defs) {
    const { value, source, problem } = resolveFlag(def, parsed, env)
    if (problem) problems.push(problem)
    else config[def.name] = value
    if (source !== 'default') given.add(def.name)
  }
  const missing = defs.filter((def) => def.required && !given.has(def.name) && config[def.name] === undefined)
  if (config.help !== true) problems.push(...missing.map(requiredProblem))
  return { config, given, problems }
}

function requiredProblem (def) {
  const hint = def.env ? ` (or set environment variable ${def.env})` : ''
  return { flag: def.kebab, option: def.name, message: `is required${hint}` }
}

function positionalProblem (positionals) {
  if (!positionals.length) return []
  const list = positionals.map((p) => JSON.stringify(String(p))).join(', ')
  return [{ flag: undefined, message: `unexpected positional argument(s): ${list}` }]
}

module.exports = { NOT_GIVEN, flagProblem, resolveAll, positionalProblem }
