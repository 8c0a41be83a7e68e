//go:build !linux

package client

import "errors"

func readSlab(int, int) ([]byte, func(), error) {
	return nil, nil, errors.New("client: slab memfds need Linux")
}
