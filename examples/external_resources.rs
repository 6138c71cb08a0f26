//! External resource interoperability (driver API 6.20), in the manner of
//! NVIDIA's `simpleVulkanMMAP` sample:
//!
//! 1. CUDA's own memory as external memory: a VMM allocation exported as a
//!    POSIX descriptor, imported with `cuImportExternalMemory` (`OPAQUE_FD`)
//!    and mapped with `cuExternalMemoryGetMappedBuffer`; words written through
//!    one view are read through the other.
//! 2. Vulkan (where a Vulkan loader and a Vulkan driver for the same GPU are
//!    present): a Vulkan buffer and a timeline semaphore exported as
//!    `OPAQUE_FD`. Vulkan fills the buffer and signals 1; CUDA waits for 1,
//!    reads Vulkan's words, writes its own with a kernel and signals 2; Vulkan
//!    waits for 2 and reads CUDA's words. Without Vulkan this half is skipped
//!    with a line saying why, and the exit code is that of the first half.
//!
//! Headless NVIDIA machines: point the Vulkan loader at the driver's EGL
//! library (see the README, "GPU tests"), as `.gpu-bundle/run.sh` does.
//!
//! `cargo run --example external_resources`. Exit codes: 0 all checks passed,
//! 1 a call or a check failed (the last line says which), 77 no GPU here (last
//! line starts with `no GPU:`).

// Structs are filled field by field: `CUmemLocation::id` moves into an anonymous
// union in CUDA 13.2, and `loc.id = 0` compiles on every release where a struct
// literal does not.
#![allow(clippy::field_reassign_with_default)]

use ash::vk;
use cuda_mem_sys::*;
use std::ffi::{c_void, CStr};
use std::process::exit;
use std::ptr::null_mut;

const PTX: &str = concat!(include_str!("kernels/fill.ptx"), "\0");
const OPAQUE_FD_MEM: vk::ExternalMemoryHandleTypeFlags =
    vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD;
const OPAQUE_FD_SEM: vk::ExternalSemaphoreHandleTypeFlags =
    vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD;

macro_rules! cu {
    ($f:ident($($arg:expr),* $(,)?)) => {{
        let r = unsafe { $f($($arg),*) };
        if r != CUDA_SUCCESS {
            fail(&format!("{} returned {}", stringify!($f), error_name(r)));
        }
    }};
}

fn error_name(r: CUresult) -> String {
    let mut s = std::ptr::null();
    match unsafe { cuGetErrorName(r, &mut s) } {
        CUDA_SUCCESS => format!(
            "{} ({})",
            unsafe { CStr::from_ptr(s) }.to_string_lossy(),
            r.0
        ),
        _ => r.0.to_string(),
    }
}

fn fail(what: &str) -> ! {
    println!("FAILED: {what}");
    exit(1)
}

/// A Vulkan call's result, or exit 1 naming the call.
fn vk_ok<T>(r: Result<T, vk::Result>, what: &str) -> T {
    r.unwrap_or_else(|e| fail(&format!("{what} returned {e:?}")))
}

fn fill(f: CUfunction, p: CUdeviceptr, bytes: usize, salt: u32, stream: CUstream) {
    let (mut out, mut n, mut salt) = (p, (bytes / 4) as u32, salt);
    let mut params = [
        (&mut out as *mut CUdeviceptr).cast::<c_void>(),
        (&mut n as *mut u32).cast(),
        (&mut salt as *mut u32).cast(),
    ];
    cu!(cuLaunchKernel(
        f,
        n.div_ceil(256).min(1024),
        1,
        1,
        256,
        1,
        1,
        0,
        stream,
        params.as_mut_ptr(),
        null_mut()
    ));
}

/// Every word of `words` must be `want(i)`.
fn expect_words(words: &[u32], want: impl Fn(u32) -> u32, what: &str) {
    if let Some(i) = (0..words.len()).find(|&i| words[i] != want(i as u32)) {
        fail(&format!(
            "{what}: word {i} is {:#x}, expected {:#x}",
            words[i],
            want(i as u32)
        ));
    }
    println!("{what}: all {} words as expected", words.len());
}

fn read_device(p: CUdeviceptr, bytes: usize) -> Vec<u32> {
    let mut host = vec![0u32; bytes / 4];
    cu!(cuMemcpyDtoH(host.as_mut_ptr().cast(), p, bytes));
    host
}

fn import_opaque_fd(fd: i32, size: u64, flags: u32) -> CUexternalMemory {
    let mut desc = CUDA_EXTERNAL_MEMORY_HANDLE_DESC::default();
    desc.type_ = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
    desc.handle.fd = fd;
    desc.size = size;
    desc.flags = flags;
    let mut ext = null_mut();
    // On success CUDA owns the descriptor: it must not be closed or used again.
    cu!(cuImportExternalMemory(&mut ext, &desc));
    ext
}

fn mapped_buffer(ext: CUexternalMemory, size: u64) -> CUdeviceptr {
    let mut desc = CUDA_EXTERNAL_MEMORY_BUFFER_DESC::default();
    desc.offset = 0;
    desc.size = size;
    let mut p = 0;
    cu!(cuExternalMemoryGetMappedBuffer(&mut p, ext, &desc));
    p
}

fn main() {
    let r = unsafe { cuInit(0) };
    if r != CUDA_SUCCESS {
        println!("no GPU: cuInit returned {}; nothing to run", r.0);
        exit(77);
    }
    let mut ctx = null_mut();
    cu!(cuDevicePrimaryCtxRetain(&mut ctx, 0));
    cu!(cuCtxSetCurrent(ctx));
    let mut module = null_mut();
    cu!(cuModuleLoadData(&mut module, PTX.as_ptr().cast()));
    let mut f = null_mut();
    cu!(cuModuleGetFunction(&mut f, module, c"fill".as_ptr()));

    vmm_as_external_memory(f);
    match vulkan_round_trip(f) {
        Ok(()) => {
            println!("OK: external_resources, VMM memory and a Vulkan buffer + timeline semaphore")
        }
        Err(reason) => {
            println!("Vulkan half skipped: {reason}");
            println!("OK: external_resources, VMM memory imported (Vulkan half skipped)");
        }
    }
    cu!(cuModuleUnload(module));
    cu!(cuDevicePrimaryCtxRelease(0));
}

/// Part 1: a VMM allocation, exported and imported back as external memory.
fn vmm_as_external_memory(f: CUfunction) {
    let mut prop = CUmemAllocationProp::default();
    prop.type_ = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type_ = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    let mut size = 0;
    cu!(cuMemGetAllocationGranularity(
        &mut size,
        &prop,
        CU_MEM_ALLOC_GRANULARITY_MINIMUM
    ));
    let mut handle = 0;
    cu!(cuMemCreate(&mut handle, size, &prop, 0));
    let mut va = 0;
    cu!(cuMemAddressReserve(&mut va, size, 0, 0, 0));
    cu!(cuMemMap(va, size, 0, handle, 0));
    let mut access = CUmemAccessDesc::default();
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    cu!(cuMemSetAccess(va, size, &access, 1));

    let mut fd = -1i32;
    cu!(cuMemExportToShareableHandle(
        (&mut fd as *mut i32).cast(),
        handle,
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
        0
    ));
    let ext = import_opaque_fd(fd, size as u64, 0);
    let mapped = mapped_buffer(ext, size as u64);
    println!("VMM allocation of {size} bytes at {va:#x}, imported as external memory, mapped at {mapped:#x}");

    fill(f, va, size, 0x0007_0001, null_mut());
    cu!(cuCtxSynchronize());
    expect_words(
        &read_device(mapped, size),
        |i| i ^ 0x0007_0001,
        "written through the VMM mapping, read through the external memory",
    );
    fill(f, mapped, size, 0x0007_0002, null_mut());
    cu!(cuCtxSynchronize());
    expect_words(
        &read_device(va, size),
        |i| i ^ 0x0007_0002,
        "written through the external memory, read through the VMM mapping",
    );

    // A mapped buffer is freed with cuMemFree, before the external memory.
    cu!(cuMemFree(mapped));
    cu!(cuDestroyExternalMemory(ext));
    cu!(cuMemUnmap(va, size));
    cu!(cuMemAddressFree(va, size));
    cu!(cuMemRelease(handle));
}

const VK_BYTES: u64 = 1 << 20;
const VK_FILL: u32 = 0x7B0F_F11E;
const CUDA_SALT: u32 = 0xC0DA_0000;

/// Part 2, with Vulkan. `Err(reason)` where there is no Vulkan to share with.
fn vulkan_round_trip(f: CUfunction) -> Result<(), String> {
    let mut uuid = CUuuid::default();
    cu!(cuDeviceGetUuid(&mut uuid, 0));
    let cuda_uuid: [u8; 16] = uuid.bytes.map(|b| b as u8);

    // The loader, an instance, and the Vulkan device that is CUDA device 0.
    let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("no Vulkan loader ({e})"))?;
    let version = vk_ok(
        unsafe { entry.try_enumerate_instance_version() },
        "vkEnumerateInstanceVersion",
    )
    .unwrap_or(vk::API_VERSION_1_0);
    if version < vk::API_VERSION_1_2 {
        return Err("the Vulkan loader is older than 1.2 (timeline semaphores)".into());
    }
    let app = vk::ApplicationInfo::default()
        .application_name(c"cuda-mem-sys external_resources")
        .api_version(vk::API_VERSION_1_2);
    let instance = match unsafe {
        entry.create_instance(
            &vk::InstanceCreateInfo::default().application_info(&app),
            None,
        )
    } {
        Ok(i) => i,
        Err(vk::Result::ERROR_INCOMPATIBLE_DRIVER) => {
            return Err("no Vulkan driver (VK_ERROR_INCOMPATIBLE_DRIVER)".into())
        }
        Err(e) => fail(&format!("vkCreateInstance returned {e:?}")),
    };
    let pdev = vk_ok(
        unsafe { instance.enumerate_physical_devices() },
        "vkEnumeratePhysicalDevices",
    )
    .into_iter()
    .find(|&p| {
        let mut id = vk::PhysicalDeviceIDProperties::default();
        let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
        unsafe { instance.get_physical_device_properties2(p, &mut props) };
        id.device_uuid == cuda_uuid
    });
    let Some(pdev) = pdev else {
        unsafe { instance.destroy_instance(None) };
        return Err("no Vulkan device has CUDA device 0's UUID".into());
    };
    let family = unsafe { instance.get_physical_device_queue_family_properties(pdev) }
        .iter()
        .position(|q| {
            q.queue_flags.contains(vk::QueueFlags::TRANSFER)
                || q.queue_flags
                    .intersects(vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE)
        })
        .unwrap_or_else(|| fail("the Vulkan device has no queue that can copy"))
        as u32;
    let priorities = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(family)
        .queue_priorities(&priorities)];
    let extensions = [
        ash::khr::external_memory_fd::NAME.as_ptr(),
        ash::khr::external_semaphore_fd::NAME.as_ptr(),
    ];
    let mut features12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
    let device_info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&extensions)
        .push_next(&mut features12);
    let device = vk_ok(
        unsafe { instance.create_device(pdev, &device_info, None) },
        "vkCreateDevice",
    );
    let queue = unsafe { device.get_device_queue(family, 0) };
    let mem_fd = ash::khr::external_memory_fd::Device::new(&instance, &device);
    let sem_fd = ash::khr::external_semaphore_fd::Device::new(&instance, &device);
    let mem_props = unsafe { instance.get_physical_device_memory_properties(pdev) };
    let memory_type = |bits: u32, want: vk::MemoryPropertyFlags| {
        (0..mem_props.memory_type_count)
            .find(|&i| {
                bits & (1 << i) != 0
                    && mem_props.memory_types[i as usize]
                        .property_flags
                        .contains(want)
            })
            .unwrap_or_else(|| fail(&format!("no Vulkan memory type {want:?}")))
    };

    // The shared buffer: device-local memory exportable as OPAQUE_FD, a
    // dedicated allocation where the driver asks for one (CUDA must be told).
    let usage = vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST;
    let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(OPAQUE_FD_MEM);
    let buffer_info = vk::BufferCreateInfo::default()
        .size(VK_BYTES)
        .usage(usage)
        .push_next(&mut external);
    let shared = vk_ok(
        unsafe { device.create_buffer(&buffer_info, None) },
        "vkCreateBuffer",
    );
    let mut dedicated_req = vk::MemoryDedicatedRequirements::default();
    let mut req2 = vk::MemoryRequirements2::default().push_next(&mut dedicated_req);
    unsafe {
        device.get_buffer_memory_requirements2(
            &vk::BufferMemoryRequirementsInfo2::default().buffer(shared),
            &mut req2,
        )
    };
    let req = req2.memory_requirements;
    let dedicated = dedicated_req.requires_dedicated_allocation != 0
        || dedicated_req.prefers_dedicated_allocation != 0;
    let mut export = vk::ExportMemoryAllocateInfo::default().handle_types(OPAQUE_FD_MEM);
    let mut dedicated_info = vk::MemoryDedicatedAllocateInfo::default().buffer(shared);
    let mut alloc = vk::MemoryAllocateInfo::default()
        .allocation_size(req.size)
        .memory_type_index(memory_type(
            req.memory_type_bits,
            vk::MemoryPropertyFlags::DEVICE_LOCAL,
        ))
        .push_next(&mut export);
    if dedicated {
        alloc = alloc.push_next(&mut dedicated_info);
    }
    let shared_mem = vk_ok(
        unsafe { device.allocate_memory(&alloc, None) },
        "vkAllocateMemory",
    );
    vk_ok(
        unsafe { device.bind_buffer_memory(shared, shared_mem, 0) },
        "vkBindBufferMemory",
    );

    // A host-visible buffer for Vulkan to read the result into.
    let readback_info = vk::BufferCreateInfo::default()
        .size(VK_BYTES)
        .usage(vk::BufferUsageFlags::TRANSFER_DST);
    let readback = vk_ok(
        unsafe { device.create_buffer(&readback_info, None) },
        "vkCreateBuffer (readback)",
    );
    let rreq = unsafe { device.get_buffer_memory_requirements(readback) };
    let host_flags = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    let rinfo = vk::MemoryAllocateInfo::default()
        .allocation_size(rreq.size)
        .memory_type_index(memory_type(rreq.memory_type_bits, host_flags));
    let readback_mem = vk_ok(
        unsafe { device.allocate_memory(&rinfo, None) },
        "vkAllocateMemory (readback)",
    );
    vk_ok(
        unsafe { device.bind_buffer_memory(readback, readback_mem, 0) },
        "vkBindBufferMemory (readback)",
    );

    // The timeline semaphore, exportable, starting at 0.
    let mut timeline_type = vk::SemaphoreTypeCreateInfo::default()
        .semaphore_type(vk::SemaphoreType::TIMELINE)
        .initial_value(0);
    let mut export_sem = vk::ExportSemaphoreCreateInfo::default().handle_types(OPAQUE_FD_SEM);
    let sem_info = vk::SemaphoreCreateInfo::default()
        .push_next(&mut timeline_type)
        .push_next(&mut export_sem);
    let timeline = vk_ok(
        unsafe { device.create_semaphore(&sem_info, None) },
        "vkCreateSemaphore",
    );

    let pool = vk_ok(
        unsafe {
            device.create_command_pool(
                &vk::CommandPoolCreateInfo::default().queue_family_index(family),
                None,
            )
        },
        "vkCreateCommandPool",
    );
    let cbs = vk_ok(
        unsafe {
            device.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(2),
            )
        },
        "vkAllocateCommandBuffers",
    );
    let fence = vk_ok(
        unsafe { device.create_fence(&vk::FenceCreateInfo::default(), None) },
        "vkCreateFence",
    );
    let whole = |b| {
        vk::BufferMemoryBarrier::default()
            .buffer(b)
            .offset(0)
            .size(vk::WHOLE_SIZE)
    };
    let begin =
        vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);

    // Vulkan: fill the buffer, hand it to the external (CUDA) side, signal 1.
    unsafe {
        vk_ok(
            device.begin_command_buffer(cbs[0], &begin),
            "vkBeginCommandBuffer",
        );
        device.cmd_fill_buffer(cbs[0], shared, 0, VK_BYTES, VK_FILL);
        let release = whole(shared)
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .src_queue_family_index(family)
            .dst_queue_family_index(vk::QUEUE_FAMILY_EXTERNAL);
        let (src, dst) = (
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::BOTTOM_OF_PIPE,
        );
        device.cmd_pipeline_barrier(
            cbs[0],
            src,
            dst,
            vk::DependencyFlags::empty(),
            &[],
            &[release],
            &[],
        );
        vk_ok(device.end_command_buffer(cbs[0]), "vkEndCommandBuffer");
    }
    let (one, signal) = ([1u64], [timeline]);
    let mut values = vk::TimelineSemaphoreSubmitInfo::default().signal_semaphore_values(&one);
    let submit = vk::SubmitInfo::default()
        .command_buffers(&cbs[..1])
        .signal_semaphores(&signal)
        .push_next(&mut values);
    vk_ok(
        unsafe { device.queue_submit(queue, &[submit], vk::Fence::null()) },
        "vkQueueSubmit (fill)",
    );

    // CUDA: import both, wait for 1 on a stream, read, write, signal 2.
    let mem_fd_value = vk_ok(
        unsafe {
            mem_fd.get_memory_fd(
                &vk::MemoryGetFdInfoKHR::default()
                    .memory(shared_mem)
                    .handle_type(OPAQUE_FD_MEM),
            )
        },
        "vkGetMemoryFdKHR",
    );
    let sem_fd_value = vk_ok(
        unsafe {
            sem_fd.get_semaphore_fd(
                &vk::SemaphoreGetFdInfoKHR::default()
                    .semaphore(timeline)
                    .handle_type(OPAQUE_FD_SEM),
            )
        },
        "vkGetSemaphoreFdKHR",
    );
    let flags = if dedicated {
        CUDA_EXTERNAL_MEMORY_DEDICATED
    } else {
        0
    };
    let ext = import_opaque_fd(mem_fd_value, req.size, flags);
    let p = mapped_buffer(ext, VK_BYTES);
    let mut sem_desc = CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC::default();
    sem_desc.type_ = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_SEMAPHORE_FD;
    sem_desc.handle.fd = sem_fd_value;
    let mut sem = null_mut();
    cu!(cuImportExternalSemaphore(&mut sem, &sem_desc));
    println!("imported Vulkan's {VK_BYTES}-byte buffer (allocation {} bytes, dedicated {dedicated}) and timeline semaphore", req.size);

    let mut stream = null_mut();
    cu!(cuStreamCreate(&mut stream, CU_STREAM_NON_BLOCKING.0));
    let mut wait = CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS::default();
    wait.params.fence.value = 1;
    cu!(cuWaitExternalSemaphoresAsync(&sem, &wait, 1, stream));
    let mut seen = vec![0u32; VK_BYTES as usize / 4];
    cu!(cuMemcpyDtoHAsync(
        seen.as_mut_ptr().cast(),
        p,
        VK_BYTES as usize,
        stream
    ));
    cu!(cuStreamSynchronize(stream));
    expect_words(
        &seen,
        |_| VK_FILL,
        "CUDA, after waiting for timeline value 1, reads Vulkan's vkCmdFillBuffer",
    );
    fill(f, p, VK_BYTES as usize, CUDA_SALT, stream);
    let mut signal_params = CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS::default();
    signal_params.params.fence.value = 2;
    cu!(cuSignalExternalSemaphoresAsync(
        &sem,
        &signal_params,
        1,
        stream
    ));

    // Vulkan: wait for 2 on the queue, take the buffer back, copy it out.
    unsafe {
        vk_ok(
            device.begin_command_buffer(cbs[1], &begin),
            "vkBeginCommandBuffer",
        );
        let acquire = whole(shared)
            .dst_access_mask(vk::AccessFlags::TRANSFER_READ)
            .src_queue_family_index(vk::QUEUE_FAMILY_EXTERNAL)
            .dst_queue_family_index(family);
        let t = vk::PipelineStageFlags::TRANSFER;
        device.cmd_pipeline_barrier(
            cbs[1],
            t,
            t,
            vk::DependencyFlags::empty(),
            &[],
            &[acquire],
            &[],
        );
        device.cmd_copy_buffer(
            cbs[1],
            shared,
            readback,
            &[vk::BufferCopy {
                src_offset: 0,
                dst_offset: 0,
                size: VK_BYTES,
            }],
        );
        let to_host = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ);
        device.cmd_pipeline_barrier(
            cbs[1],
            t,
            vk::PipelineStageFlags::HOST,
            vk::DependencyFlags::empty(),
            &[to_host],
            &[],
            &[],
        );
        vk_ok(device.end_command_buffer(cbs[1]), "vkEndCommandBuffer");
    }
    let (two, wait_sems, stages) = ([2u64], [timeline], [vk::PipelineStageFlags::TRANSFER]);
    let mut values = vk::TimelineSemaphoreSubmitInfo::default().wait_semaphore_values(&two);
    let submit = vk::SubmitInfo::default()
        .command_buffers(&cbs[1..])
        .wait_semaphores(&wait_sems)
        .wait_dst_stage_mask(&stages)
        .push_next(&mut values);
    vk_ok(
        unsafe { device.queue_submit(queue, &[submit], fence) },
        "vkQueueSubmit (readback)",
    );
    vk_ok(
        unsafe { device.wait_for_fences(&[fence], true, 30_000_000_000) },
        "vkWaitForFences",
    );
    let mapped = vk_ok(
        unsafe { device.map_memory(readback_mem, 0, VK_BYTES, vk::MemoryMapFlags::empty()) },
        "vkMapMemory",
    );
    let words = unsafe { std::slice::from_raw_parts(mapped.cast::<u32>(), VK_BYTES as usize / 4) };
    expect_words(
        words,
        |i| i ^ CUDA_SALT,
        "Vulkan, after waiting for timeline value 2, reads CUDA's kernel output",
    );

    cu!(cuStreamSynchronize(stream));
    cu!(cuStreamDestroy(stream));
    cu!(cuDestroyExternalSemaphore(sem));
    cu!(cuMemFree(p));
    cu!(cuDestroyExternalMemory(ext));
    unsafe {
        device.unmap_memory(readback_mem);
        device.destroy_fence(fence, None);
        device.destroy_command_pool(pool, None);
        device.destroy_semaphore(timeline, None);
        device.destroy_buffer(readback, None);
        device.destroy_buffer(shared, None);
        device.free_memory(readback_mem, None);
        device.free_memory(shared_mem, None);
        device.destroy_device(None);
        instance.destroy_instance(None);
    }
    Ok(())
}
