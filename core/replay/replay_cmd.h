/* `replay`: publishes already-published events again (README: Replay). */
#ifndef OBX_REPLAY_CMD_H
#define OBX_REPLAY_CMD_H

/* argv[0] is "replay". Returns the exit code. */
int replay_main(int argc, char **argv);

#endif
