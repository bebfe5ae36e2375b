/* A shared object without the descriptor symbol: refused as "not a plugin". */
int no_symbol_answer(void);
int no_symbol_answer(void)
{
    return 42;
}
