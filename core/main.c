/* Placeholder until the CLI lands. */
#include <stdio.h>
int main(void)
{
    fputs("outbox-relay: CLI not built yet\n", stderr);
    return 1;
}
