'use strict'

const { closestName } = require('../lib/shared/closest-name')
const { NOT_GIVEN, flagProblem } = require('./flag-resolution')

const NEGATIVE_NUMBER = /^-\.?\d/

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

/**
 * Makes argv safe for minimist: every flag token becomes `--name` (so the
 * seed-style `-retry` is not split into -r -e -t -r -y), boolean values
 * become --x / --no-x, and negative numbers stay attached to their flag.
 * @param {string[]} argv
 * @param {Map<string, object>} lookup every flag name → its flag
 * @returns {{ out: string[], problems: object[] }}
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

/** minimist's options for the flags: types, aliases, and NOT_GIVEN as every default. */
function minimistOptions (defs) {
  const opts = { string: [], boolean: [], alias: {}, default: {} }
  for (const def of defs) {
    opts[def.type.name === 'boolean' ? 'boolean' : 'string'].push(...def.names)
    opts.alias[def.name] = def.names.filter((name) => name !== def.name)
    for (const name of def.names) opts.default[name] = NOT_GIVEN
  }
  return opts
}

module.exports = { preprocess, minimistOptions }
