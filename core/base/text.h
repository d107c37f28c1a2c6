/* Texts the engine writes to the database: valid UTF-8, whatever a driver,
 * a broker or a row handed it. */
#ifndef OBX_TEXT_H
#define OBX_TEXT_H

#include <stddef.h>
#include <stdio.h>

/*
 * Copies src into dst (cap bytes with the NUL) as valid UTF-8: each invalid
 * byte becomes U+FFFD, and a cut falls on a character boundary. Returns
 * dst. src may be NULL (copied as "").
 */
char *text_copy(char *dst, size_t cap, const char *src);

/* True when the n bytes at s are valid UTF-8 without NUL. */
int text_valid(const char *s, size_t n);

/* Row data on a terminal: at most max bytes of s to out, control characters
 * shown (\xNN), not obeyed; "..." when cut. */
void text_print_clean(FILE *out, const char *s, size_t max);

/* Replaces every occurrence of key in text (freed) by value: a fresh string. */
char *text_fill(char *text, const char *key, const char *value);

#endif
