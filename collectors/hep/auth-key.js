'use strict'

const fs = require('node:fs')
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

module.exports = { readAuthKey, authKeyFileProblem, PASSWORD_ENV }
