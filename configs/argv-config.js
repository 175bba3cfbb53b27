'use strict'

const util = require('node:util')
const minimist = require('minimist')
const InvalidConfigError = require('../exceptions/invalid-config-error')
const { compile, mergeFlags, deepFreeze } = require('./flag-definitions')
const { preprocess, minimistOptions } = require('./argv-preprocess')
const { resolveAll, positionalProblem } = require('./flag-resolution')
const { helpText } = require('./help-text')
const { CONFIG_KEYS } = require('../lib/shared/symbols')

/**
 * The generic argv engine: a class whose static `flags` declares what it
 * parses (argv, then environment, then default). `LoadBalancerConfig`
 * extends it with the load balancer's flags; the CLI's commands extend it
 * with their own. Subclasses declare `static flags = Parent.extendFlags({ ... })`
 * and may override `validate(config, given)` and `finalize(config)`.
 */
class ArgvConfig {
  /** Flag declarations: option name → definition. Frozen. */
  static flags = deepFreeze({})

  /** Usage line shown by help(). */
  static usage = '[options]'

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
   * The parsed, validated, deep-frozen config (computed once): a key per flag.
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

  /** Usage text listing every flag, grouped; secret values never shown. */
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
    return []
  }

  /**
   * Last touch on the parsed values before freezing.
   * @param {object} config
   * @returns {object}
   */
  finalize (config) {
    return config
  }

  _parse () {
    const { defs, lookup } = this._compiled
    const pre = preprocess(this.argv, lookup)
    const parsed = minimist(pre.out, minimistOptions(defs))
    const { config, given, problems } = resolveAll(defs, parsed, this.env)
    problems.unshift(...pre.problems, ...positionalProblem(parsed._))
    if (!problems.length) problems.push(...this.validate(config, given))
    if (problems.length) return { error: new InvalidConfigError(problems) }
    return { config: this._seal(this.finalize(config)) }
  }

  // Frozen; carries its keys for LoadBalancer (CONFIG_KEYS), and
  // util.inspect (console.log) shows secrets as <hidden>.
  _seal (config) {
    const secrets = this._compiled.defs.filter((def) => def.secret).map((def) => def.name)
    config[CONFIG_KEYS] = Object.keys(config)
    Object.defineProperty(config, util.inspect.custom, {
      value: (depth, options, inspect) => inspect(redactedCopy(config, secrets), options)
    })
    return deepFreeze(config)
  }
}

function redactedCopy (config, secrets) {
  const copy = { ...config }
  delete copy[CONFIG_KEYS]
  for (const name of secrets) if (copy[name] !== undefined) copy[name] = '<hidden>'
  return copy
}

module.exports = ArgvConfig
