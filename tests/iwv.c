#include "iwv.h"
