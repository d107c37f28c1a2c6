/* check-driver: the driver conformance runner. */
#ifndef OBX_CONFORMANCE_H
#define OBX_CONFORMANCE_H

/* Runs `check-driver DRIVER.so|NAME [-c CONFIG] [-o OUTPUT] [--drivers-dir DIR]
 * [--bad-output NAME] [--destination D] [--timeout SEC]` with argv[0] =
 * "check-driver". Prints one "PASS name" / "FAIL name: why" / "SKIP name: why"
 * line per check on stdout. Returns 0 when every check passed, 1 when one
 * failed, 2 on a usage or configuration error. */
int conformance_main(int argc, char **argv);

#endif
