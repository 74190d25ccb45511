/*
 * macros: the two every C tree writes for itself, written once here.
 */
#ifndef EXECGATE_COMMON_MACROS_H
#define EXECGATE_COMMON_MACROS_H

#include <stddef.h>

/* The struct of type that holds member at ptr (the libuv handle model: a
 * callback gets the embedded handle, the code wants its owner). */
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* The number of elements of an array (not of a pointer: the division
 * below makes no sense for one, and the compiler says so under -Wall). */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
