'use strict'

// Text a sender chose, made safe to print: on a person's terminal (the CLI's
// views), in a log file read with `tail` or `pm2 logs`, in the calls view's
// text export. A terminal acts on control characters instead of showing
// them: ESC starts sequences that retitle the window, move the cursor or
// erase a line; CR returns to the line's start, so a sender's text can
// overwrite ours with a fake line; bidi overrides and zero-width characters
// make text read as other text. Each such character is written as escape
// text instead, so what a sender sent is what the operator reads. Used by
// the master (logs), the workers and the CLI (app/terminal-text.js): the
// one declaration of the rules.

// The one list of what never reaches a terminal raw: Cc (C0, DEL, C1), Cf
// (bidi embeddings, overrides, isolates and marks, zero-width characters,
// the soft hyphen, BOM, tag characters), Zl and Zp (U+2028, U+2029: line
// breaks to some terminals), Cs (a lone surrogate is not text), what
// Unicode says to draw as nothing (Default_Ignorable_Code_Point: also the
// Hangul fillers, variation selectors and the code points reserved for
// future invisible ones); and the backslash, which starts our escapes.
const ESCAPED = /[\\\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Default_Ignorable_Code_Point}]/gu
const SHORT = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/**
 * `text` with each character a terminal would act on, or would not show,
 * written as visible escape text: `\x1b`, `\r`, `\n`, `\t`, `\x9b`,
 * `\u202e`, `\u{e0041}`. A backslash shows as `\\`, so escape text a sender
 * typed is told apart from a character we escaped.
 * @param {*} text
 * @returns {string}
 */
function printable (text) {
  return String(text).replace(ESCAPED, escapeOne)
}

/**
 * printable(), keeping the lines: a line break (LF, or CR LF) and a tab
 * stay as they are, so a SIP message or a stack prints as its lines; a CR
 * alone, which would overwrite the line, is written `\r`.
 * @param {*} text
 * @returns {string}
 */
function printableLines (text) {
  return String(text).replace(ESCAPED, (c, at, whole) => c === '\n' || c === '\t' || (c === '\r' && whole[at + 1] === '\n') ? c : escapeOne(c))
}

/** The escape text of one character ESCAPED matches. */
function escapeOne (c) {
  if (SHORT[c]) return SHORT[c]
  const code = c.codePointAt(0)
  if (code < 0x100) return `\\x${hex(code, 2)}`
  return code > 0xffff ? `\\u{${hex(code, 1)}}` : `\\u${hex(code, 4)}`
}

function hex (code, digits) {
  return code.toString(16).padStart(digits, '0')
}

module.exports = { printable, printableLines, escapeOne, hex, ESCAPED }
