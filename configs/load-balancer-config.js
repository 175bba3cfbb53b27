'use strict'
const os = require('node:os')
const util = require('node:util')
const minimist = require('minimist')
const InvalidConfigError = require('../exceptions/invalid-config-error')
const { resolveType, parseValue, formatValue, lastGiven } = require('./flag-types')
const { DEFAULTS, INTEGER_RANGES, UDP_RECEIVERS } = require('../lib/master/options')
const { FRAMINGS } = require('../lib/protocols/framing')
const { strategies } = require('../lib/master/distribution')
const protocols = require('../lib/protocols')

// An object, not a Symbol: minimist runs its number test on defaults.
const NOT_GIVEN = Object.freeze({ notGiven: true })
const NEGATIVE_NUMBER = /^-\.?\d/
const DEFINITION_KEYS = new Set([
  'alias', 'type', 'default', 'required', 'description', 'choices', 'min', 'max',
  'env', 'validate', 'secret', 'keywords', 'group'
])

// ---------------------------------------------------------------- helpers

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

// Optimal string alignment distance: Levenshtein plus adjacent swaps.
function editDistance (a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i])
  for (let j = 1; j <= b.length; j++) d[0][j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1)
      }
    }
  }
  return d[a.length][b.length]
}

function closestName (name, candidates) {
  let best
  let bestDistance = Math.max(1, Math.floor(name.length / 3)) + 1
  for (const candidate of candidates) {
    const distance = editDistance(name, candidate)
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance]
  }
  if (best || name.length < 3) return best
  const prefixed = candidates.filter((c) => c.startsWith(name))
  return prefixed.length === 1 ? prefixed[0] : undefined
}

// ------------------------------------------------------ flag definitions

function checkDefinition (name, def) {
  if (!def || typeof def !== 'object') throw new TypeError(`flag ${name}: definition must be an object`)
  const extra = Object.keys(def).filter((key) => !DEFINITION_KEYS.has(key))
  if (extra.length) throw new TypeError(`flag ${name}: unknown definition key(s) ${extra.join(', ')}`)
  if (def.validate !== undefined && typeof def.validate !== 'function') {
    throw new TypeError(`flag ${name}: validate must be a function`)
  }
}

function normalizeFlag (name, def) {
  checkDefinition(name, def)
  const type = resolveType(def.type)
  const aliases = [].concat(def.alias || [])
  const names = [...new Set([toKebab(name), name, ...aliases])]
  const flag = { ...def, name, kebab: toKebab(name), type, aliases, names }
  flag.defaultValue = defaultOf(flag)
  return Object.freeze(flag)
}

function defaultOf (flag) {
  if (flag.default === undefined) return undefined
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

// Flags objects are frozen, so compiling once per flags object is safe.
function compile (flags) {
  if (!compiledCache.has(flags)) {
    const defs = Object.entries(flags).map(([name, def]) => normalizeFlag(name, def))
    compiledCache.set(flags, { defs, lookup: indexNames(defs) })
  }
  return compiledCache.get(flags)
}

function mergeFlags (parent, changes) {
  const merged = { ...parent }
  for (const [name, change] of Object.entries(changes)) {
    if (change === null) delete merged[name]
    else merged[name] = { ...merged[name], ...change }
  }
  return deepFreeze(merged)
}

// ------------------------------------------------------ argv preprocessing

function isFlagToken (token) {
  return token.length > 1 && token[0] === '-' && !NEGATIVE_NUMBER.test(token)
}

function splitToken (token) {
  const body = token.replace(/^--?/, '')
  const eq = body.indexOf('=')
  return eq === -1 ? { body, key: body } : { body, key: body.slice(0, eq), value: body.slice(eq + 1) }
}

function unknownProblem (key, lookup) {
  const longNames = [...lookup.keys()].filter((name) => name.length > 1)
  const suggestion = closestName(key, longNames)
  return { flag: key, message: suggestion ? `unknown flag; did you mean --${suggestion}?` : 'unknown flag' }
}

function rewriteNegation (token, ctx) {
  const def = ctx.lookup.get(token.key.slice(3))
  if (def.type.name !== 'boolean') {
    ctx.problems.push({ flag: token.key, option: def.name, message: `--${def.kebab} is not a boolean flag and cannot be negated` })
  } else if (token.value !== undefined) {
    ctx.problems.push({ flag: token.key, option: def.name, message: 'a negated flag takes no value' })
  } else {
    ctx.out.push(`--${token.key}`)
  }
}

function rewriteBoolean (token, def, ctx) {
  const result = def.type.parse(token.value)
  if (result.error) ctx.problems.push(flagProblem(def, result.error, token.value))
  else ctx.out.push(result.value ? `--${token.key}` : `--no-${token.key}`)
}

// A value flag takes a following negative number (minimist would read it
// as flags); a secret flag takes any following token, so that a secret
// starting with '-' is never echoed back as an unknown flag.
function takesNext (def, next) {
  if (next === undefined || next === '--') return false
  return NEGATIVE_NUMBER.test(next) || Boolean(def.secret)
}

function rewriteKnown (token, def, next, ctx) {
  if (def.type.name === 'boolean' && token.value !== undefined) return rewriteBoolean(token, def, ctx)
  if (def.type.name !== 'boolean' && token.value === undefined && takesNext(def, next)) {
    ctx.out.push(`--${token.key}=${next}`)
    return 1
  }
  ctx.out.push(`--${token.body}`)
}

function isNegation (key, lookup) {
  return key.startsWith('no-') && lookup.has(key.slice(3))
}

/* Returns how many following tokens were consumed. */
function rewriteFlag (raw, next, ctx) {
  const token = splitToken(raw)
  const def = ctx.lookup.get(token.key)
  if (def) return rewriteKnown(token, def, next, ctx) || 0
  if (isNegation(token.key, ctx.lookup)) return rewriteNegation(token, ctx) || 0
  ctx.problems.push(unknownProblem(token.key, ctx.lookup))
  ctx.out.push(`--${token.body}`) // still parsed, so that its value is not taken for a positional
  return 0
}

/*
 * Make argv safe for minimist: every flag token becomes `--name` (so the
 * seed-style `-retry` is not split into -r -e -t -r -y), boolean values
 * become --x / --no-x, and negative numbers stay attached to their flag.
 */
function preprocess (argv, lookup) {
  const ctx = { lookup, out: [], problems: [] }
  for (let i = 0; i < argv.length; i++) {
    const token = String(argv[i])
    if (token === '--') {
      ctx.out.push(...argv.slice(i).map(String))
      break
    }
    if (isFlagToken(token)) i += rewriteFlag(token, argv[i + 1], ctx)
    else ctx.out.push(token)
  }
  return ctx
}

function minimistOptions (defs) {
  const opts = { string: [], boolean: [], alias: {}, default: {} }
  for (const def of defs) {
    opts[def.type.name === 'boolean' ? 'boolean' : 'string'].push(...def.names)
    opts.alias[def.name] = def.names.filter((name) => name !== def.name)
    for (const name of def.names) opts.default[name] = NOT_GIVEN
  }
  return opts
}

// ---------------------------------------------------------- resolution

function redact (def, text) {
  return def.secret ? '<hidden>' : text
}

function flagProblem (def, message, raw, source) {
  const shown = raw === undefined || raw === '' ? '' : `, got ${redact(def, JSON.stringify(raw))}`
  const from = source === 'env' ? ` (from environment variable ${def.env})` : ''
  return { flag: def.kebab, option: def.name, message: `${message}${shown}${from}` }
}

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

function requiredProblem (def) {
  const hint = def.env ? ` (or set environment variable ${def.env})` : ''
  return { flag: def.kebab, option: def.name, message: `is required${hint}` }
}

function positionalProblem (positionals) {
  if (!positionals.length) return []
  const list = positionals.map((p) => JSON.stringify(String(p))).join(', ')
  return [{ flag: undefined, message: `unexpected positional argument(s): ${list}` }]
}

// ------------------------------------------------------------------ help

function flagSyntax (def) {
  const shorts = def.aliases.filter((a) => a.length === 1).map((a) => `-${a}`)
  // the camelCase spelling is accepted too, but help shows the kebab one
  const longs = def.names.filter((n) => n.length > 1 && (n === def.kebab || n !== def.name)).map((n) => `--${n}`)
  const negation = def.type.name === 'boolean' && def.default === true ? [`--no-${def.kebab}`] : []
  return [...shorts, ...longs, ...negation].join(', ') + helpMetavar(def)
}

function helpMetavar (def) {
  if (def.type.name === 'boolean') return ''
  const words = def.keywords ? Object.keys(def.keywords) : []
  return ` <${[def.type.metavar, ...words].join('|')}>`
}

function helpDefault (def) {
  if (def.secret || def.default === undefined || def.default === false) return undefined
  if (def.keywords && Object.hasOwn(def.keywords, String(def.default))) return String(def.default)
  const text = formatValue(def.type, def.defaultValue)
  return text === '' ? '""' : text
}

function helpDetails (def) {
  const parts = []
  if (def.choices) parts.push(`choices: ${def.choices.join(', ')}`)
  if (def.min !== undefined) parts.push(`min: ${def.min}`)
  if (def.max !== undefined) parts.push(`max: ${def.max}`)
  const shown = helpDefault(def)
  if (shown !== undefined) parts.push(`default: ${shown}`)
  if (def.env) parts.push(`env: ${def.env}`)
  if (def.required) parts.push('required')
  if (def.secret) parts.push('secret')
  return parts.join('; ')
}

function groupRows (defs) {
  const groups = new Map()
  for (const def of defs) {
    const group = def.group || 'Options'
    if (!groups.has(group)) groups.set(group, [])
    groups.get(group).push({ left: flagSyntax(def), description: def.description || '', details: helpDetails(def) })
  }
  return groups
}

function formatRow (row, width) {
  const pad = ' '.repeat(width + 4)
  const lines = [`  ${row.left.padEnd(width)}  ${row.description}`.trimEnd()]
  if (row.details) lines.push(row.description ? `${pad}${row.details}` : lines.pop() + row.details)
  return lines
}

function helpText (usage, defs) {
  const groups = groupRows(defs)
  const rows = [...groups.values()].flat()
  const width = Math.max(...rows.map((row) => row.left.length))
  const lines = [`Usage: ${usage}`]
  for (const [group, groupRowsList] of groups) {
    lines.push('', `${group}:`, ...groupRowsList.flatMap((row) => formatRow(row, width)))
  }
  lines.push('', 'Long flags also work in camelCase (--retryDelay=5s) and with a single dash (-retry).',
    'Durations: 250, 250ms, 5s, 2m, 1h. Lists: comma-separated. Precedence: argv, then env, then default.')
  return lines.join('\n') + '\n'
}

// ------------------------------------------------------------ base flags

// What LoadBalancer checks (lib/master/options.js) is what the flags accept: the
// default, range and choices of each flag that is a LoadBalancer option
// come from there and from the registries, never written twice.
function option (name, choices) {
  const [min, max] = INTEGER_RANGES[name] || []
  return { default: DEFAULTS[name], ...(min === undefined ? {} : { min, max }), ...(choices ? { choices: [...choices] } : {}) }
}

const BASE_FLAGS = deepFreeze({
  protocol: {
    type: 'string', ...option('protocol', protocols.list()), group: 'Listener',
    description: 'udp datagrams, tcp_server (accept connections) or tcp_client (connect out)'
  },
  host: { type: 'string', ...option('host'), group: 'Listener', description: 'address to bind (tcp_client: to connect to)' },
  port: { alias: 'p', type: 'port', ...option('port'), group: 'Listener', description: 'port to bind (tcp_client: to connect to); 0 = ephemeral' },
  framing: {
    type: 'string', ...option('framing', FRAMINGS), group: 'Listener',
    description: 'how TCP streams are split into messages'
  },
  udpReceiver: {
    type: 'string', ...option('udpReceiver', UDP_RECEIVERS), group: 'Listener',
    description: 'udp receive path: native recvmmsg (built on install), node:dgram, or auto = native when built'
  },
  maxFrameBytes: { type: 'integer', ...option('maxFrameBytes'), group: 'Listener', description: 'largest TCP frame accepted' },
  maxConnections: { type: 'integer', ...option('maxConnections'), group: 'Listener', description: 'tcp_server: concurrent connections accepted' },
  maxConnectionsPerSource: { type: 'integer', ...option('maxConnectionsPerSource'), group: 'Listener', description: 'tcp_server: concurrent connections accepted from one remote address' },
  idleTimeout: { type: 'duration', ...option('idleTimeout'), group: 'Listener', description: 'close TCP connections idle this long; 0 = never' },
  retry: { type: 'boolean', ...option('retry'), group: 'Listener', description: 'restart the listener after socket errors' },
  retryDelay: { type: 'duration', ...option('retryDelay'), group: 'Listener', description: 'first restart delay; grows x1.5 per failure' },
  workername: { alias: ['w', 'worker'], type: 'path', required: true, group: 'Workers', description: 'path of the worker module' },
  instances: {
    alias: 'i', type: 'integer', ...option('instances'), group: 'Workers',
    keywords: { auto: () => os.availableParallelism() },
    description: 'worker processes; auto = one per CPU'
  },
  distribution: {
    type: 'string', ...option('distribution', Object.keys(strategies)), group: 'Workers',
    description: 'how messages are assigned to workers'
  },
  batchSize: { type: 'integer', ...option('batchSize'), group: 'Workers', description: 'messages per IPC batch to a worker' },
  batchDelay: { type: 'integer', ...option('batchDelay'), group: 'Workers', description: 'ms a batch waits to fill before it is sent (0 = end of the event-loop turn)' },
  maxInFlight: { type: 'integer', ...option('maxInFlight'), group: 'Workers', description: 'per worker: messages handed to it and not yet acknowledged (stored)' },
  name: {
    alias: 'n', type: 'string', ...option('name'), group: 'General', description: 'collector name (process and log name)',
    validate: (name) => /^[A-Za-z0-9][\w.-]*$/.test(name) ? undefined : 'use letters, digits, ".", "_" and "-" only'
  },
  logLevel: {
    type: 'string', choices: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], default: 'info', group: 'General',
    description: 'minimum level logged'
  },
  help: { alias: 'h', type: 'boolean', default: false, group: 'General', description: 'show this help' }
})

// ------------------------------------------------------------------ class

/**
 * Parses argv (and env) into the options object a LoadBalancer takes.
 * Subclasses declare `static flags = ParentConfig.extendFlags({ ... })`
 * and may override `validate(config, given)` for cross-flag checks.
 */
class LoadBalancerConfig {
  /** Flag declarations: option name → definition. Frozen. */
  static flags = BASE_FLAGS

  /** Usage line shown by help(). */
  static usage = 'collector [options]'

  /**
   * A new flags object: the flags of `this` class with `changes` applied.
   * A change merges into the existing definition of that flag, a new name
   * adds a flag, `null` removes one. The parent's flags are not touched.
   * @param {Object<string, object|null>} changes
   * @returns {Readonly<Object<string, object>>}
   */
  static extendFlags (changes) {
    const flags = mergeFlags(this.flags, changes)
    compile(flags) // definition mistakes surface where the subclass is declared
    return flags
  }

  /**
   * Parse and validate in one call.
   * @param {string[]} [argv]
   * @param {Object<string, string>} [env]
   * @returns {Readonly<object>}
   * @throws {InvalidConfigError}
   */
  static parse (argv, env) {
    return new this(argv, env).getConfig()
  }

  /**
   * @param {string[]} [argv] arguments without node and script
   * @param {Object<string, string>} [env] environment variables
   */
  constructor (argv = process.argv.slice(2), env = process.env) {
    if (!Array.isArray(argv)) throw new TypeError('argv must be an array of strings')
    this.argv = Object.freeze([...argv])
    this.env = env || {}
    this._compiled = compile(this.constructor.flags)
    this._result = undefined
  }

  /**
   * The parsed, validated, deep-frozen config (computed once).
   * Has a key per flag, plus `worker` (= `workername`).
   * @returns {Readonly<object>}
   * @throws {InvalidConfigError} listing every problem found; each problem
   *   is `{ flag, option, message }` (flag as typed in kebab-case, option the
   *   config key; positional-argument problems have no flag)
   */
  getConfig () {
    if (!this._result) this._result = this._parse()
    if (this._result.error) throw this._result.error
    return this._result.config
  }

  /**
   * The defaults alone (no argv, no env), in the shape of getConfig().
   * @returns {Readonly<object>}
   */
  getDefault () {
    const config = {}
    for (const def of this._compiled.defs) config[def.name] = def.defaultValue
    return this._seal(this.finalize(config))
  }

  /**
   * Usage text listing every flag, grouped; secret values never shown.
   * @returns {string}
   */
  help () {
    return helpText(this.constructor.usage, this._compiled.defs)
  }

  /**
   * Cross-flag checks, run once every flag is individually valid.
   * Subclasses extend: `return [...super.validate(config, given), ...mine]`.
   * @param {object} config the parsed values
   * @param {Set<string>} given option names set from argv or env
   * @returns {Array<{flag: string, message: string}>}
   */
  validate (config, given) {
    const problems = []
    if (config.protocol === 'udp' && given.has('framing')) {
      problems.push({ flag: 'framing', message: 'applies to tcp protocols only, but --protocol is udp' })
    }
    if (config.protocol === 'tcp_client' && config.port === 0) {
      problems.push({ flag: 'port', message: 'tcp_client needs the remote port to connect to, got 0' })
    }
    return problems
  }

  /**
   * Last touch on the parsed values before freezing: adds `worker`, the
   * LoadBalancer's name for `workername`.
   * @param {object} config
   * @returns {object}
   */
  finalize (config) {
    if ('workername' in config) config.worker = config.workername
    return config
  }

  _parse () {
    const { defs, lookup } = this._compiled
    const pre = preprocess(this.argv, lookup)
    const parsed = minimist(pre.out, minimistOptions(defs))
    const { config, given, problems } = this._resolve(defs, parsed)
    problems.unshift(...pre.problems, ...positionalProblem(parsed._))
    if (!problems.length) problems.push(...this.validate(config, given))
    if (problems.length) return { error: new InvalidConfigError(problems) }
    return { config: this._seal(this.finalize(config)) }
  }

  _resolve (defs, parsed) {
    const config = {}
    const given = new Set()
    const problems = []
    for (const def of defs) {
      const { value, source, problem } = resolveFlag(def, parsed, this.env)
      if (problem) problems.push(problem)
      else config[def.name] = value
      if (source !== 'default') given.add(def.name)
    }
    const wantsHelp = config.help === true
    const missing = defs.filter((def) => def.required && !given.has(def.name) && config[def.name] === undefined)
    if (!wantsHelp) problems.push(...missing.map(requiredProblem))
    return { config, given, problems }
  }

  // Frozen, and util.inspect (console.log) shows secrets as <hidden>.
  _seal (config) {
    const secrets = this._compiled.defs.filter((def) => def.secret).map((def) => def.name)
    Object.defineProperty(config, util.inspect.custom, {
      value: (depth, options, inspect) => inspect(redactedCopy(config, secrets), options)
    })
    return deepFreeze(config)
  }
}

function redactedCopy (config, secrets) {
  const copy = { ...config }
  for (const name of secrets) if (copy[name] !== undefined) copy[name] = '<hidden>'
  return copy
}

module.exports = LoadBalancerConfig
