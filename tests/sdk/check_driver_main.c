/* Runs the conformance runner without the CLI, so the SDK tests do not
 * depend on how core/main.c dispatches: `sdk-check-driver ARGS` is
 * `outbox-relay check-driver ARGS`. */
#include "conformance/conformance.h"

int main(int argc, char **argv)
{
    argv[0] = "check-driver";
    return conformance_main(argc, argv);
}
