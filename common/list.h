/*
 * list: an intrusive doubly linked list, circular around a head node.
 *
 * The node lives inside the listed struct (container_of gets the struct
 * back), so listing allocates nothing and unlinking needs no search and
 * cannot fail.  An unlinked node points at itself: list_unlink is safe to
 * call twice, and list_linked says whether a node is in a list.
 */
#ifndef EXECGATE_COMMON_LIST_H
#define EXECGATE_COMMON_LIST_H

#include "common/macros.h"

#include <stdbool.h>

struct list {
    struct list *prev, *next;
};

/* An empty list, or a node in no list. */
static inline void
list_init(struct list *l)
{
    l->prev = l->next = l;
}

static inline bool
list_empty(const struct list *head)
{
    return head->next == head;
}

/* Whether node (initialised with list_init) is in a list. */
static inline bool
list_linked(const struct list *node)
{
    return node->next != node;
}

/* Adds node (in no list) at the end of head's list. */
static inline void
list_insert_tail(struct list *head, struct list *node)
{
    node->prev = head->prev;
    node->next = head;
    head->prev->next = node;
    head->prev = node;
}

/* Adds node (in no list) at the start of head's list. */
static inline void
list_insert_head(struct list *head, struct list *node)
{
    node->next = head->next;
    node->prev = head;
    head->next->prev = node;
    head->next = node;
}

/* Takes node out of its list (a no-op when it is in none). */
static inline void
list_unlink(struct list *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    list_init(node);
}

/* The struct of type holding node as member. */
#define list_entry(node, type, member) container_of(node, type, member)

/* Each node of head's list in order, as pos; pos may be unlinked (and
 * freed) in the body: the next one is read before it runs. */
#define list_foreach_safe(pos, tmp, head)                                                          \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head);                               \
         (pos) = (tmp), (tmp) = (pos)->next)

/* Each node of head's list in order; the body must not unlink pos. */
#define list_foreach(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

#endif
