/* `purge`: removes dead events, by id, age or route, in one transaction, in
 * whichever source the config runs (its purge hooks, source.h). */
#ifndef OBX_PURGE_CMD_H
#define OBX_PURGE_CMD_H

/* argv[0] is "purge". Returns the exit code. */
int purge_main(int argc, char **argv);

#endif
