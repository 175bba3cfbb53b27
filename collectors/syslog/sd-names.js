'use strict'

// Stored field names are ours, values are the sender's. The keys of the
// stored `structuredData` map are SD-IDs and PARAM-NAMEs, which the sender
// chooses: a name starting with `$` or holding a `.` cannot be reached by a
// dot path, and stricter servers (older MongoDB, DocumentDB, Cosmos DB)
// refuse the whole insert. So those two characters, and `%` so that the rule
// can be undone, are percent-encoded, as a URL does: `%` → `%25`, `.` →
// `%2E`, `$` → `%24`. Every other character an SD-NAME may hold (printable
// ASCII) stays as sent, so ordinary names are stored exactly as before, and
// any URL decoder (decodeURIComponent) gives the name back.

const ESCAPED_ALL = /[%.$]/g
const ENCODED_ALL = /%(25|2E|24)/gi
const CODES = Object.freeze({ '%': '%25', '.': '%2E', $: '%24' })
const CHARACTERS = Object.freeze({ 25: '%', '2E': '.', 24: '$' })

/**
 * The `structuredData` key of an SD-ID or PARAM-NAME.
 * @param {string} name as the sender wrote it
 * @returns {string} the name with `%`, `.` and `$` percent-encoded
 */
function encodeSdName (name) {
  return name.replace(ESCAPED_ALL, (c) => CODES[c])
}

/**
 * The SD-ID or PARAM-NAME a `structuredData` key stands for: the inverse of
 * encodeSdName (the same as decodeURIComponent on any key it made).
 * @param {string} key
 * @returns {string}
 */
function decodeSdName (key) {
  return key.indexOf('%') === -1 ? key : key.replace(ENCODED_ALL, (_, hex) => CHARACTERS[hex.toUpperCase()])
}

module.exports = { encodeSdName, decodeSdName }
