/*
 * termcap-none: the termcap interface with no terminal database behind it,
 * for the musl build of the patched zsh (build-shell.sh).  zsh's configure
 * insists on a termcap library, and Debian has no musl build of ncurses.
 * The shell tool never gives zsh a terminal: zsh reads a terminal's
 * capabilities only when it is interactive, and then, as for a terminal
 * name it does not know, it draws its line editor without them.
 */

/* Only zsh links this file, and zsh declares these itself. */
int tgetent(char *bp, const char *name);
int tgetnum(char *id);
int tgetflag(char *id);
char *tgetstr(char *id, char **area);
char *tgoto(const char *cap, int col, int row);
int tputs(const char *str, int affcnt, int (*putc)(int));

/* Not in the database: 0, as termcap says for a terminal it does not know. */
int
tgetent(char *bp, const char *name)
{
    (void)bp;
    (void)name;
    return 0;
}

/* No numeric capability: -1. */
int
tgetnum(char *id)
{
    (void)id;
    return -1;
}

/* No flag: 0. */
int
tgetflag(char *id)
{
    (void)id;
    return 0;
}

/* No string capability: NULL. */
char *
tgetstr(char *id, char **area)
{
    (void)id;
    (void)area;
    return 0;
}

/* Nothing to put the numbers into: no string, as for an unknown one. */
char *
tgoto(const char *cap, int col, int row)
{
    (void)cap;
    (void)col;
    (void)row;
    return 0;
}

/* Writes STR as it is (it carries no padding: nothing here made it). */
int
tputs(const char *str, int affcnt, int (*putc)(int))
{
    (void)affcnt;
    if (!str)
        return -1;
    for (; *str; str++)
        putc((unsigned char)*str);
    return 0;
}
