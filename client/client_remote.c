/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Remote connections (daqiri_connect("ucx://HOST:PORT")): a consumer of
 * daqiri-relay over UCX, behind the same handles. Being written.
 */
#include "client_internal.h"
