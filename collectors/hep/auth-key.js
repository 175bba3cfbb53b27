'use strict'

const fs = require('node:fs')
const { timingSafeEqual } = require('node:crypto')
const InvalidOptionError = require('../../exceptions/invalid-option-error')

const PASSWORD_ENV = 'COLLECTOR_HEP_PASSWORD'

/**
 * The auth key (chunk 0x0e) agents must send: the first line of `file`,
 * else the environment variable COLLECTOR_HEP_PASSWORD, else null (every
 * packet is taken). The setting's check (authKeyFileProblem) reads it where
 * the collector is configured, so that a file it cannot read is refused
 * before anything starts; each worker reads it again.
 */
function readAuthKey (file, env = process.env) {
  if (!file) return env[PASSWORD_ENV] ? env[PASSWORD_ENV] : null
  const { key, problem } = readKeyFile(file)
  if (problem) throw new InvalidOptionError('hepPasswordFile', file, problem)
  return key
}

/** What is wrong with an auth-key file (the setting's check), or undefined. */
function authKeyFileProblem (file) {
  return readKeyFile(file).problem
}

/**
 * The check of the key a packet carries (a string, or undefined when it
 * carries none) against `key`, with timingSafeEqual: the time taken tells
 * a guesser nothing of where a key of the right length differs. (Its
 * length it may tell, as every such check does unless it hashes both
 * sides; hashing cost a keyed packet 60 % more, and the key's entropy is
 * in its bytes, not its length.) A null key lets every packet through.
 *
 * @param {string|null} key
 * @returns {(given: string|undefined) => boolean}
 */
function authKeyCheck (key) {
  if (key === null) return () => true
  const expected = Buffer.from(key, 'utf8')
  return (given) => {
    if (typeof given !== 'string') return false
    const bytes = Buffer.from(given, 'utf8')
    return bytes.length === expected.length && timingSafeEqual(bytes, expected)
  }
}

function readKeyFile (file) {
  let text
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (err) {
    return { problem: `cannot be read (${err.code || err.message})` }
  }
  const key = text.split(/\r?\n/)[0]
  return key ? { key } : { problem: 'is empty: its first line is the auth key' }
}

module.exports = { readAuthKey, authKeyCheck, authKeyFileProblem, PASSWORD_ENV }
