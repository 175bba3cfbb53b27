'use strict'

// MongoDB refuses these in a database name on every platform it runs on
// (the manual's naming restrictions; Windows refuses more, *<>:|?, which a
// server on Linux takes), and names of 64 bytes or more.
const REFUSED = /[/\\. "$\0]/
const MAX_BYTES = 63

/**
 * What is wrong with a database name (`--database`), or undefined: said
 * when the flag is read, not as a write error once the workers run.
 * @param {string} name
 * @returns {string|undefined}
 */
function databaseNameProblem (name) {
  if (name === undefined) return undefined
  if (name === '') return 'must not be empty'
  const bad = REFUSED.exec(name)
  if (bad) return `a database name cannot hold ${JSON.stringify(bad[0])} (MongoDB refuses / \\ . " $, space and NUL in one)`
  if (Buffer.byteLength(name) > MAX_BYTES) return `MongoDB takes database names of at most ${MAX_BYTES} bytes, this has ${Buffer.byteLength(name)}`
  return undefined
}

module.exports = { databaseNameProblem }
