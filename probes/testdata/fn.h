/* FN name ... END name: a global function symbol with its type and size,
 * for the probes tests' assembly images. */
	.macro FN name
	.globl \name
	.type \name, @function
\name:
	.endm
	.macro END name
	.size \name, . - \name
	.endm
